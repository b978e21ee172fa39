"""``dprec serve demo``'s parts without a browser (issue 34 §2): the services' CORS option
(off by default, the page's origin alone when on), the page's content-security policy, the
page server's routes (seats, hints, refusals) and the demo's settings."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

sys.path.insert(0, str(Path(__file__).parents[1] / "clients"))
from demo_fixture import fixture_catalogue  # noqa: E402

from dprec.errors import DprecError  # noqa: E402
from dprec.services.demo import DemoSettings, catalogue_of  # noqa: E402
from dprec.services.demo_page import PageServer, bundle_path, content_security_policy  # noqa: E402
from dprec.services.http import install_cors  # noqa: E402

PAGE = "http://127.0.0.1:8480"


def _app(origins):
    app = FastAPI()

    @app.get("/v1/protocol")
    async def protocol() -> dict[str, str]:
        return {"system": "dp-pop"}

    install_cors(app, origins)
    return TestClient(app)


def test_cors_is_off_by_default_and_answers_only_the_page_when_on():
    off = _app([]).get("/v1/protocol", headers={"Origin": PAGE})
    assert off.status_code == 200 and "access-control-allow-origin" not in off.headers
    on = _app([PAGE])
    assert on.get("/v1/protocol", headers={"Origin": PAGE}).headers[
        "access-control-allow-origin"] == PAGE
    other = on.get("/v1/protocol", headers={"Origin": "http://127.0.0.1:9999"})
    assert "access-control-allow-origin" not in other.headers
    pre = on.options("/v1/protocol", headers={
        "Origin": PAGE, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,x-dprec-client,content-type"})
    assert pre.status_code == 200
    assert "access-control-allow-credentials" not in pre.headers
    assert "ETag" in on.get("/v1/protocol", headers={"Origin": PAGE}).headers[
        "access-control-expose-headers"]


@pytest.mark.parametrize("origin", ["*", "127.0.0.1:80", "http://127.0.0.1", "http://h:1/path",
                                    "javascript:alert(1)"])
def test_a_cors_origin_that_is_no_origin_is_refused(origin):
    with pytest.raises(DprecError, match="--cors-origin must be an origin"):
        install_cors(FastAPI(), [origin])


def test_the_policy_allows_scripts_from_the_page_alone_and_connects_to_loopback_alone():
    csp = content_security_policy("http://127.0.0.1:1", "http://127.0.0.1:2")
    rules = dict(r.strip().split(" ", 1) for r in csp.split(";"))
    assert rules["default-src"] == "'none'"
    assert rules["script-src"] == "'self' 'wasm-unsafe-eval'"  # no inline, no eval
    assert rules["connect-src"] == "'self' http://127.0.0.1:1 http://127.0.0.1:2"
    assert rules["img-src"] == "'self'" and rules["style-src"] == "'self'"


def _page_dir(tmp_path: Path) -> Path:
    page = tmp_path / "js" / "demo"
    page.mkdir(parents=True)
    for name in ("index.html", "demo.css", "logo.svg"):
        (page / name).write_text(f"<!-- {name} -->")
    bundle_path(page).parent.mkdir(parents=True)
    bundle_path(page).write_text("console.log(1)")
    return page


def test_the_page_server_needs_its_bundle(tmp_path):
    page = _page_dir(tmp_path)
    bundle_path(page).unlink()
    with pytest.raises(DprecError, match="make demo-js"):
        PageServer(page)


def test_the_page_server_serves_its_files_seats_and_hints_under_its_policy(tmp_path):
    seats = iter([{"client_id": 7, "token": "t"}])
    heard: list[int] = []
    page = PageServer(_page_dir(tmp_path))
    page.serve({"server": "http://127.0.0.1:1", "proxy": "http://127.0.0.1:2", "items": []},
               lambda: next(seats, None), heard.append)
    try:
        with httpx.Client(base_url=page.origin) as c:
            home = c.get("/")
            assert home.status_code == 200 and home.text == "<!-- index.html -->"
            assert home.headers["content-security-policy"] == page.policy
            assert c.get("/demo.js").headers["content-type"].startswith("text/javascript")
            assert c.get("/config.json").json()["proxy"] == "http://127.0.0.1:2"
            for path in ("/../demo.py", "/dist/demo/demo.js", "/index.html/"):
                assert c.get(path).status_code == 404, path
            assert c.post("/enrol", headers={"Origin": page.origin}).json()["client_id"] == 7
            again = c.post("/enrol")
            assert again.status_code == 409 and "--seats" in again.json()["detail"]
            assert c.post("/enrol", headers={"Origin": "http://evil"}).status_code == 403
            assert c.post("/reported", content=b"{}").status_code == 400
            assert c.post("/reported", content=json.dumps({"client_id": 7})).status_code == 200
    finally:
        page.stop()
    assert heard == [7]


def test_the_settings_and_the_catalogue():
    with pytest.raises(DprecError, match="--crowd must be an integer >= 1"):
        DemoSettings(crowd=0)
    with pytest.raises(DprecError, match="--close-at must be in 1..30"):
        DemoSettings(crowd=10, seats=20, close_at=31)
    with pytest.raises(DprecError, match="--port must be in 0..65535"):
        DemoSettings(port=70000)
    with pytest.raises(DprecError, match="epsilon must be finite and > 0"):
        DemoSettings(epsilon=-1.0)
    films = catalogue_of(fixture_catalogue(n_users=5, n_items=12))
    assert [f["id"] for f in films] == list(range(12))
    assert films[1] == {"id": 1, "title": "Film 001", "year": 1991}
    assert films[9]["year"] is None  # an unknown year stays unknown


@pytest.mark.slow  # the page, a server and a proxy as processes, three Python devices
@pytest.mark.timeout(300)
@pytest.mark.parametrize("sigint_ignored", [False, True])  # True: as a parent that ignores it
def test_serve_demo_prints_the_url_serves_the_catalogue_and_stops_all_on_ctrl_c(
        tmp_path, sigint_ignored):
    import os
    import signal
    import subprocess
    import time

    from demo_fixture import write_grouplens

    def ignore_sigint() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    data = write_grouplens(tmp_path / "ml-100k")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "dprec.cli", "serve", "demo", "--data-dir",
                             str(data), "--crowd", "3", "--seats", "1", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            preexec_fn=ignore_sigint if sigint_ignored else None)
    try:
        line = proc.stdout.readline()
        assert line.startswith("dprec demo: open http://127.0.0.1:"), line
        url = line.split()[3]
        services = [w.rstrip(",);") for w in line.split() if w.startswith("http")][1:]
        page = httpx.get(url, timeout=30)
        assert page.status_code == 200 and "script-src 'self'" in page.headers[
            "content-security-policy"]
        config = httpx.get(url + "config.json", timeout=30).json()
        assert len(config["items"]) == 200 and config["items"][0]["title"] == \
            "Fixture Film 1 (1995)"
        assert [config["server"], config["proxy"]] == services
        assert httpx.get(services[0] + "/v1/protocol").json()["n_items"] == 200
        crowd = proc.stdout.readline()  # the crowd's three devices report
        assert "the crowd's 3 devices reported (0 failed)" in crowd, crowd
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and "dprec demo: stopped" in out
    time.sleep(0.5)
    for origin in [url, *services]:
        with pytest.raises(httpx.ConnectError):
            httpx.get(origin, timeout=5)
