"""`dprec data fetch ml-1m|ml-10m|ml-20m|ml-25m`: download from a local HTTP server (never
the internet), resume, and refuse truncated or corrupt archives without leaving files."""

from __future__ import annotations

import hashlib
import http.server
import io
import re
import socket
import threading
import zipfile
from dataclasses import dataclass, field

import pytest
from typer.testing import CliRunner

from dprec.cli import app
from dprec.data import grouplens
from dprec.data.grouplens import Archive, fetch_movielens, partial_path
from dprec.data.registry import load_dataset
from dprec.errors import DataError

pytestmark = pytest.mark.usefixtures("no_releases")

RATINGS = "".join(f"{u}::{i}::{(u + i) % 5 + 1}::{978300760 + u * 100 + i}\n"
                  for u in range(1, 41) for i in range(1, 61) if i <= 20 + u)
USERS = "".join(f"{u}::F::25::4::55455\n" for u in range(1, 41))
MOVIES = "".join(f"{i}::Movie {i} (1995)::Comedy|Drama\n" for i in range(1, 61))


def ml1m_zip(**replace: str) -> bytes:
    """A small archive in ML-1M's layout (``ml-1m/ratings.dat`` ...)."""
    files = {"ratings.dat": RATINGS, "users.dat": USERS, "movies.dat": MOVIES,
             "README": "fixture\n", **replace}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in files.items():
            z.writestr(f"ml-1m/{name}", text)
    return buf.getvalue()


GOOD = ml1m_zip()


def pin(data: bytes) -> Archive:
    return Archive("ml-1m", len(data), hashlib.sha256(data).hexdigest(),
                   hashlib.md5(data, usedforsecurity=False).hexdigest(), "ml-1m",
                   ("ratings.dat", "users.dat", "movies.dat"))


@dataclass
class Server:
    """What the test server serves at ``/ml-1m.zip`` and how."""

    data: bytes = GOOD
    drops: int = 0
    """Requests still to cut after half of the body (the connection is shut down)."""
    ranges: bool = True
    """Whether ``Range: bytes=N-`` is honoured (206), else ignored (200, whole file)."""
    status: int = 200
    requests: list[str | None] = field(default_factory=list)
    """The Range header of every request (None: none)."""
    url: str = ""


@pytest.fixture
def server():
    """An HTTP server on 127.0.0.1 in a thread."""
    state = Server()

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            header = self.headers.get("Range")
            state.requests.append(header)
            if self.path != "/ml-1m.zip" or state.status != 200:
                self.send_error(404 if self.path != "/ml-1m.zip" else state.status)
                return
            data, start = state.data, 0
            if header and state.ranges:
                start = int(header.removeprefix("bytes=").rstrip("-"))
                if start >= len(data):
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{len(data)}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(206)
                self.send_header("Content-Range",
                                 f"bytes {start}-{len(data) - 1}/{len(data)}")
            else:
                self.send_response(200)
            body = data[start:]
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if state.drops:
                state.drops -= 1
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            self.wfile.write(body)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    yield state
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache, ML-1M pinned to the good fixture, no data dir, no waiting."""
    monkeypatch.setenv("DPREC_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("DPREC_DATA", raising=False)
    monkeypatch.delenv(grouplens.BASE_URL_ENV, raising=False)
    monkeypatch.setitem(grouplens.ARCHIVES, "ml-1m", pin(GOOD))
    monkeypatch.setattr(grouplens, "RETRY_WAIT_S", 0.0)
    return tmp_path / "cache"


def assert_nothing_kept(cache):
    assert not (cache / "ml-1m").exists()
    assert not partial_path("ml-1m").exists()
    assert not [p for p in cache.glob(".ml-1m-*")]


def test_fetch_verifies_extracts_and_loads_from_the_cache(server, cache):
    seen: list[tuple[int, int]] = []
    folder = fetch_movielens("ml-1m", url=server.url, progress=lambda d, t: seen.append((d, t)))
    assert folder == cache / "ml-1m"
    assert sorted(p.name for p in folder.iterdir()) == [
        "manifest.json", "movies.dat", "ratings.dat", "users.dat"]
    assert seen[-1] == (len(GOOD), len(GOOD))
    assert not partial_path("ml-1m").exists()
    ds = load_dataset("ml-1m")
    assert (ds.n_users, ds.n_items, ds.n_interactions) == (40, 60, RATINGS.count("\n"))
    assert ds.history[0].startswith("source: cache")
    assert fetch_movielens("ml-1m", url=server.url) == folder
    assert server.requests == [None]


def test_a_dropped_connection_resumes_with_a_range_request(server, cache):
    server.drops = 1
    fetch_movielens("ml-1m", url=server.url)
    half = len(GOOD) // 2
    assert server.requests == [None, f"bytes={half}-"]
    assert (cache / "ml-1m" / "ratings.dat").read_text() == RATINGS


def test_a_server_without_ranges_restarts_from_the_first_byte(server, cache):
    server.drops, server.ranges = 1, False
    fetch_movielens("ml-1m", url=server.url)
    assert server.requests == [None, f"bytes={len(GOOD) // 2}-"]
    assert (cache / "ml-1m" / "ratings.dat").read_text() == RATINGS


def test_a_partial_file_from_an_earlier_run_is_resumed(server, cache):
    part = partial_path("ml-1m")
    part.parent.mkdir(parents=True)
    part.write_bytes(GOOD[:100])
    fetch_movielens("ml-1m", url=server.url)
    assert server.requests == ["bytes=100-"]
    assert (cache / "ml-1m" / "movies.dat").read_text() == MOVIES


def test_a_network_that_stays_down_keeps_the_partial_file_for_the_next_run(server, cache):
    server.drops = grouplens.RETRIES + 1
    with pytest.raises(DataError, match=r"kept failing .* run the command again to resume"):
        fetch_movielens("ml-1m", url=server.url)
    assert not (cache / "ml-1m").exists()
    assert 0 < partial_path("ml-1m").stat().st_size < len(GOOD)
    fetch_movielens("ml-1m", url=server.url)
    assert server.requests[-1] is not None and server.requests[-1].startswith("bytes=")
    assert (cache / "ml-1m" / "ratings.dat").read_text() == RATINGS


def test_a_truncated_archive_is_refused_and_nothing_is_kept(server, cache):
    server.data = GOOD[: len(GOOD) - 200]
    with pytest.raises(DataError, match=rf"offers {len(GOOD) - 200:,} bytes, but ml-1m.zip "
                                        rf"has {len(GOOD):,}: it is truncated"):
        fetch_movielens("ml-1m", url=server.url)
    assert_nothing_kept(cache)


def test_a_truncated_archive_found_by_resuming_is_refused(server, cache):
    server.data = GOOD[:300]
    part = partial_path("ml-1m")
    part.parent.mkdir(parents=True)
    part.write_bytes(GOOD[:400])
    with pytest.raises(DataError, match="the server's file ends before 400 bytes"):
        fetch_movielens("ml-1m", url=server.url)
    assert_nothing_kept(cache)


def test_a_corrupted_archive_is_refused_and_nothing_is_kept(server, cache):
    bad = bytearray(GOOD)
    bad[len(bad) // 2] ^= 0xFF
    server.data = bytes(bad)
    with pytest.raises(DataError, match=r"corrupt or not the published ml-1m.zip: its "
                                        r"sha256 and md5 differ .* it was deleted"):
        fetch_movielens("ml-1m", url=server.url)
    assert_nothing_kept(cache)


def test_an_archive_without_the_rating_file_is_refused(server, cache, monkeypatch):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("ml-1m/movies.dat", MOVIES)
    server.data = buf.getvalue()
    monkeypatch.setitem(grouplens.ARCHIVES, "ml-1m", pin(server.data))
    with pytest.raises(DataError, match=r"lacks ratings.dat, users.dat in ml-1m/"):
        fetch_movielens("ml-1m", url=server.url)
    assert_nothing_kept(cache)


def test_a_missing_file_is_an_http_error_not_a_retry(server, cache):
    server.status = 404
    with pytest.raises(DataError, match=r"ml-1m.zip: HTTP 404"):
        fetch_movielens("ml-1m", url=server.url)
    assert server.requests == [None]
    assert_nothing_kept(cache)


def test_an_edited_cache_is_refused(server, cache):
    folder = fetch_movielens("ml-1m", url=server.url)
    (folder / "ratings.dat").write_text(RATINGS.replace("::5::", "::4::", 1))
    with pytest.raises(DataError, match=r"ratings.dat changed since it was fetched .*"
                                        r"`dprec data fetch ml-1m`"):
        load_dataset("ml-1m")


def test_without_the_cache_the_error_says_how_to_fetch(cache):
    with pytest.raises(DataError, match=r"ML-1M: not in the cache .*: run `dprec data fetch "
                                        r"ml-1m`"):
        load_dataset("ml-1m")


def test_the_base_url_comes_from_the_environment(server, cache, monkeypatch):
    monkeypatch.setenv(grouplens.BASE_URL_ENV, server.url + "/")
    assert grouplens.base_url() == server.url
    assert grouplens.base_url("http://mirror.example/ml") == "http://mirror.example/ml"
    fetch_movielens("ml-1m")
    assert server.requests == [None]


def test_every_release_is_pinned_and_gets_from_grouplens_by_default(monkeypatch):
    monkeypatch.delenv(grouplens.BASE_URL_ENV, raising=False)
    assert grouplens.base_url() == "https://files.grouplens.org/datasets/movielens"
    assert set(grouplens.ARCHIVES) == {"ml-1m", "ml-10m", "ml-20m", "ml-25m"}
    for name, arch in grouplens.ARCHIVES.items():
        assert arch.name == name and arch.size > 1_000_000
        assert re.fullmatch("[0-9a-f]{64}", arch.sha256), arch.sha256
        assert re.fullmatch("[0-9a-f]{32}", arch.md5), arch.md5


runner = CliRunner()


def test_cli_fetch_works_against_the_local_server(server, cache):
    res = runner.invoke(app, ["data", "fetch", "ml-1m", "--url", server.url])
    assert res.exit_code == 0, res.output
    assert f"ml-1m: 40 users, 60 items, {RATINGS.count(chr(10)):,} interactions" in res.output
    assert "source: cache" in res.output


def test_cli_fetch_fails_clearly_on_a_corrupted_file(server, cache):
    server.data = GOOD[:-1] + bytes([GOOD[-1] ^ 1])
    res = runner.invoke(app, ["data", "fetch", "ml-1m", "--url", server.url])
    assert res.exit_code == 2
    text = " ".join(res.output.split())
    assert "error:" in text and "corrupt or not the published ml-1m.zip" in text
    assert "9.1/9.1 kB" in text, "the progress bar shows the bytes"
    assert_nothing_kept(cache)


def test_cli_fetch_with_the_papers_filter(server, cache):
    res = runner.invoke(app, ["data", "fetch", "ml-1m:min40", "--url", server.url])
    assert res.exit_code == 0, res.output
    counts = [sum(1 for line in RATINGS.splitlines() if line.startswith(f"{u}::"))
              for u in range(1, 41)]
    kept = sum(c >= 40 for c in counts)
    assert kept == 21
    assert f"ml-1m:min40: {kept} users" in res.output
