"""Slow and many connections cannot take a service down (issue 31 §4: about 20K half-sent
requests used up the proxy's file handles; nothing timed a request's arrival out, and there
was no connection cap). A real ``dprec serve`` process with short limits: slowloris-style
sockets (partial headers, headers dripping a byte at a time, a body that stops) are closed
by the service, connections beyond the cap are refused at once, and it keeps answering."""

from __future__ import annotations

import socket
import time

import httpx
import pytest

from dprec.services.launch import Loopback

CAP = 50
WAIT = 60.0
"""Seconds a test socket waits for the service to close it (a safety net, not a timing)."""


def _open(port: int, first: bytes = b"") -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
    if first:
        s.sendall(first)
    return s


def _reply_then_closed(s: socket.socket) -> bytes:
    """What the service sent before closing ``s`` (socket.timeout if it never closes)."""
    got = b""
    try:
        while chunk := s.recv(4096):
            got += chunk
    except ConnectionResetError:
        pass
    s.close()
    return got


def _healthy(url: str) -> bool:
    return httpx.get(url + "/healthz", timeout=WAIT).status_code == 200


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    with Loopback(tmp_path_factory.mktemp("limits")) as lb:
        srv = lb.server("dplcf-sp", 20, {"neighbours": "3"},
                        extra=["--header-timeout", "3", "--body-timeout", "3",
                               "--max-connections", str(CAP)])
        yield lb, srv


@pytest.mark.slow
def test_half_sent_requests_are_closed_and_the_service_stays_responsive(service):
    lb, srv = service
    partial = [_open(srv.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
               for _ in range(20)]
    silent = [_open(srv.port) for _ in range(10)]
    dripping = _open(srv.port, b"GET /v1/round HTTP/1.1\r\n")
    body = _open(srv.port, b"POST /v1/start HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                 + lb.secret + b"\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 100\r\n\r\n{\"generator\"")
    assert _healthy(srv.url)  # 32 slow connections open: others are served
    for _ in range(40):  # a header byte every 0.2 s: each resets uvicorn's own idle timer
        try:
            dripping.sendall(b"X")
        except OSError:
            break  # closed by the service
        time.sleep(0.2)
    for s in [*partial, *silent, dripping, body]:
        assert _reply_then_closed(s).startswith(b"HTTP/1.1 408 ")
    assert _healthy(srv.url)
    assert "Traceback" not in srv.log_tail(100_000)  # the route read a disconnect: a 400
    assert httpx.get(srv.url + "/v1/round", timeout=WAIT).json()["started"] is False


@pytest.mark.slow
def test_connections_beyond_the_cap_are_refused_at_once(service):
    _, srv = service
    held = [_open(srv.port) for _ in range(CAP + 10)]
    replies = [_reply_then_closed(s) for s in held]
    refused = [r for r in replies if r.startswith(b"HTTP/1.1 503 ")]
    assert len(refused) >= 10 and b"too many connections" in refused[0]
    assert all(r.startswith((b"HTTP/1.1 503 ", b"HTTP/1.1 408 ")) for r in replies)
    assert _healthy(srv.url)
