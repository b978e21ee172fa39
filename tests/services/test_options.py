"""Every service option is checked up front, with a one-line error (issue 21 §2, §4)."""

import socket
import time

import pytest
from svc import SECRET, TOKEN_KEY, dplcf_info, fmf_info
from typer.testing import CliRunner

import dprec.cli.serve as cli_serve
from dprec.cli import app
from dprec.errors import DprecError
from dprec.services import server as server_module
from dprec.services.proxy import ProxySettings
from dprec.services.server import ServerSettings, create_server_app


def _refused(args: list[str], *, contains: str, env: dict[str, str] | None = None) -> str:
    res = CliRunner().invoke(app, args, env={"DPREC_SHARED_SECRET": SECRET.decode(),
                                             "DPREC_TOKEN_KEY": TOKEN_KEY.decode(),
                                             **(env or {})})
    text = " ".join(res.output.split())  # the console wraps lines
    assert res.exit_code == 2, (res.exception, text)
    assert isinstance(res.exception, SystemExit), res.exception
    assert "Traceback" not in res.output and contains in text, text
    return text


@pytest.fixture
def never_served(monkeypatch):
    """A command that passes its checks would serve forever: make that a failure."""
    def serve(*args, **kwargs):
        raise AssertionError("the service started")
    monkeypatch.setattr(cli_serve, "_serve", serve)


SERVER = ["serve", "server", "--protocol", "dplcf-sp", "--n-items", "20"]
PROXY = ["serve", "proxy", "--server", "http://127.0.0.1:9"]


@pytest.mark.parametrize("args, contains", [
    (["--port", "99999"], "--port must be in 0..65535"),
    (["--port", "-1"], "--port must be in 0..65535"),
    (["--port", "0", "--log-level", "shout"], "--log-level must be one of"),
    (["--port", "0", "--max-batch-mb", "0"], "--max-batch-mb must be >= 1 (MiB), got 0"),
    (["--port", "0", "--max-batch-mb", "-1"], "--max-batch-mb must be >= 1 (MiB), got -1"),
])
def test_server_options(tmp_path, never_served, args, contains):
    _refused([*SERVER, "--state", str(tmp_path / "s"), *args], contains=contains)


def test_a_state_that_names_a_file_is_refused(tmp_path, never_served):
    (tmp_path / "file").write_text("x")
    _refused([*SERVER, "--state", str(tmp_path / "file"), "--port", "0"],
             contains="cannot keep the state in")


@pytest.mark.parametrize("args, contains", [
    (["--round-seconds", "-1"], "round_seconds must be a finite number > 0"),
    (["--round-seconds", "nan"], "round_seconds must be a finite number > 0"),
    (["--max-body", "0"], "max_body must be an integer >= 1"),
    (["--rate", "inf"], "rate must be a finite number > 0"),
    (["--server", "notaurl"], "--server must be http(s)://host[:port]"),
    (["--port", "70000"], "--port must be in 0..65535"),
])
def test_proxy_options(tmp_path, never_served, args, contains):
    _refused([*PROXY, "--state", str(tmp_path / "p"), "--port", "0", *args],
             contains=contains)


def test_a_client_id_the_proxy_would_refuse_gets_no_token():
    _refused(["serve", "token", "18446744073709551616"], contains="64-bit signed integer")


def test_settings_refuse_what_the_cli_refuses(tmp_path):
    with pytest.raises(DprecError, match="batch limit must be an integer >= 31 bytes"):
        ServerSettings(fmf_info(), tmp_path, SECRET, max_batch_bytes=0)
    with pytest.raises(DprecError, match="batch limit"):
        ServerSettings(dplcf_info(), tmp_path, SECRET, max_batch_bytes=-1)
    for bad in (-1.0, float("nan"), float("inf"), 0.0):
        with pytest.raises(DprecError, match="round_seconds"):
            ProxySettings("http://server", tmp_path, SECRET, TOKEN_KEY, round_seconds=bad)
    for url in ("notaurl", "ftp://host", "http://", "http://host:99999"):
        with pytest.raises(DprecError, match="URL must be http"):
            ProxySettings(url, tmp_path, SECRET, TOKEN_KEY)


def test_a_server_that_cannot_fit_is_refused_up_front_with_the_estimate(tmp_path,
                                                                        monkeypatch):
    # N = 2^24, F = 255: V alone is 31.9 GiB, which /v1/start used to draw
    big = fmf_info(n_items=1 << 24, factors=255)
    with pytest.raises(DprecError, match=r"takes 31\.9 GiB and a round about 127\.5 GiB; "
                                         r"16\.0 GiB are available"):
        ServerSettings(big, tmp_path, SECRET, memory=16 << 30)
    monkeypatch.setattr(server_module, "machine_memory", lambda: 16 << 30)
    with pytest.raises(DprecError, match="31.9 GiB"):
        ServerSettings(big, tmp_path, SECRET)
    ServerSettings(fmf_info(), tmp_path, SECRET)  # a small one fits


def test_a_server_that_cannot_fit_is_refused_by_the_cli(tmp_path, monkeypatch, never_served):
    monkeypatch.setattr(server_module, "machine_memory", lambda: 16 << 30)
    _refused(["serve", "server", "--protocol", "fmf-ldp", "--n-items", str(1 << 24),
              "--param", "factors=255", "--state", str(tmp_path / "s"), "--port", "0"],
             contains="V (16,777,216 x 255 float64) takes 31.9 GiB")


def test_every_status_of_start_is_in_the_openapi_document(tmp_path):
    from starlette.testclient import TestClient
    from svc import AUTH
    app_ = create_server_app(ServerSettings(fmf_info(), tmp_path, SECRET))
    with TestClient(app_) as c:
        r = c.post("/v1/start", content=b'{"generator": "\xff"}',
                   headers={**AUTH, "Content-Type": "application/json"})
    assert r.status_code == 400
    assert "400" in app_.openapi()["paths"]["/v1/start"]["post"]["responses"]


SIMULATE = ["simulate", "fmf-ldp", "--transport", "http", "--dataset", "synthetic-50x20",
            "--seeds", "1"]


@pytest.mark.parametrize("args, contains", [
    (["--threshold", "0"], "--threshold must be >= 1 (senders), got 0"),
    (["--batch-senders", "0"], "--batch-senders must be >= 1, got 0"),
    (["--threshold", "5", "--batch-senders", "3"], "--batch-senders must be >= --threshold"),
])
def test_simulate_refuses_proxy_options_it_used_to_replace(tmp_path, monkeypatch, args,
                                                            contains):
    def started(*a, **k):
        raise AssertionError("services started")
    monkeypatch.setattr(cli_serve, "_http_transport", started)
    _refused([*SIMULATE, *args, "--out", str(tmp_path)], contains=contains)


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow  # dprec simulate as a process, its retries
@pytest.mark.timeout(60)
@pytest.mark.parametrize("system", ["dplcf-sp", "fmf-ldp"])
def test_simulate_against_a_dead_server_fails_at_once(tmp_path, system):
    dead = f"http://127.0.0.1:{_dead_port()}"
    t = time.monotonic()
    _refused(["simulate", system, "--transport", "http", "--dataset", "synthetic-100x100",
              "--negatives", "30", "--seeds", "1", "--server", dead, "--proxy", dead,
              "--out", str(tmp_path)],
             contains=f"the server at {dead} does not answer")
    assert time.monotonic() - t < 30
