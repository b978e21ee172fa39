"""Every request body is capped, and read only after the credential is checked (issue 31 §4:
``POST /v1/start`` read and parsed a 400 MB body before its credential check, taking the
server from 245 MB to 1.48 GB). The bodies here are lazy streams that count the chunks the
service pulled, so a test sees how much of a body was read."""

from __future__ import annotations

import asyncio
import json

import httpx
from svc import AUTH, OPERATOR_AUTH, Stack, dplcf_info, headers

from dprec.services.http import DEFAULT_BODY_LIMIT
from dprec.services.server import ServerSettings, create_server_app

MB = 1 << 20
SECRET = b"s" * 32


class Stream:
    """``chunks`` chunks of ``size`` bytes, produced only when pulled."""

    def __init__(self, chunks: int, size: int = MB) -> None:
        self.chunks, self.size, self.pulled = chunks, size, 0

    async def __aiter__(self):
        chunk = b"{" + b" " * (self.size - 1)
        for _ in range(self.chunks):
            self.pulled += 1
            yield chunk
            chunk = b" " * self.size


def _post(app, path: str, body, extra: dict[str, str] | None = None) -> httpx.Response:
    async def go() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app),
                                     base_url="http://svc") as client:
            return await client.post(path, content=body, headers=extra or {})
    return asyncio.run(go())


def _server(tmp_path, max_batch_bytes: int = MB):
    return create_server_app(ServerSettings(dplcf_info(), tmp_path / "server", SECRET,
                                            max_batch_bytes=max_batch_bytes))


def test_start_checks_the_credential_before_reading_the_body(tmp_path):
    app = _server(tmp_path)
    for extra in ({}, {"Authorization": "Bearer " + "x" * 32}):
        body = Stream(400)  # 400 MB, if it were read
        r = _post(app, "/v1/start", body, extra)
        assert r.status_code == 401, r.text
        assert body.pulled == 0


def test_start_refuses_a_body_over_its_limit_while_it_streams(tmp_path):
    app = _server(tmp_path, max_batch_bytes=MB)
    body = Stream(400, size=64 << 10)  # chunked: no length to check up front
    r = _post(app, "/v1/start", body, AUTH)
    assert r.status_code == 413, r.text
    assert r.json()["error"] == f"the body must be <= {MB} bytes on this route"
    assert r.headers["connection"] == "close"
    assert body.pulled == 17  # 16 chunks fit in 1 MiB: refused on the 17th, nothing after
    declared = Stream(400)
    r = _post(app, "/v1/start", declared, {**AUTH, "Content-Length": str(400 * MB)})
    assert r.status_code == 413 and "Content-Length says 419430400" in r.json()["error"]
    assert declared.pulled == 0
    r = _post(app, "/v1/start", b"[1, 2]", AUTH)
    assert r.status_code == 422 and "JSON object" in r.json()["error"]
    r = _post(app, "/v1/start", b"{not json", AUTH)
    assert r.status_code == 400
    assert _post(app, "/v1/start", b"", AUTH).status_code == 200  # no body: a CSPRNG start


def test_every_route_caps_the_body_it_reads(tmp_path):
    with Stack(tmp_path, dplcf_info(), threshold=1) as stack:
        stack.start()
        # the operator's JSON: the default limit
        body = Stream(100, size=DEFAULT_BODY_LIMIT // 4)
        r = _post(stack.proxy_app, "/v1/secret", body, OPERATOR_AUTH)
        assert r.status_code == 413, r.text
        assert r.json()["error"] == (f"the body must be <= {DEFAULT_BODY_LIMIT} bytes on "
                                     "this route")
        assert body.pulled == 5
        unauthenticated = Stream(100, size=DEFAULT_BODY_LIMIT // 4)
        assert _post(stack.proxy_app, "/v1/secret", unauthenticated).status_code == 401
        assert unauthenticated.pulled == 0
        # a submission: the protocol's message size, counted as it streams
        size = stack.info.upload_size()
        report = Stream(100, size=size)
        r = _post(stack.proxy_app, "/v1/rounds/0/reports", report, headers(5))
        assert r.status_code == 413 and f"<= {size} bytes" in r.text
        assert report.pulled == 2
        # a batch: the server's --max-batch-mb
        batch = Stream(100, size=MB // 2)
        r = _post(stack.server_app, "/v1/rounds/0/batches", batch,
                  {**AUTH, "Idempotency-Key": "k" * 16})
        assert r.status_code == 413 and r.json()["error"].startswith(
            f"the body must be <= {MB} bytes"), r.text
        assert batch.pulled == 3
        # a close carries no body: the default limit, if anything reads one
        r = _post(stack.server_app, "/v1/rounds/0/close", json.dumps({"x": 1}).encode(), AUTH)
        assert r.status_code in (200, 409)
