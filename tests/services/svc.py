"""Helpers for the services' tests: apps in this process (ASGI) and real processes."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
from starlette.testclient import TestClient  # noqa: E402

from dprec.protocol.deployment import generator_to_json  # noqa: E402
from dprec.services.auth import client_token  # noqa: E402
from dprec.services.proxy import ProxySettings, create_proxy_app  # noqa: E402
from dprec.services.server import ServerSettings, create_server_app  # noqa: E402
from dprec.systems.deployable import ProtocolInfo  # noqa: E402
from dprec.systems.dplcf.system import LocalItemCFConfig  # noqa: E402
from dprec.systems.fmf.system import FMFConfig  # noqa: E402

SECRET = b"s" * 32
TOKEN_KEY = b"t" * 32
OPERATOR = b"o" * 32
AUTH = {"Authorization": "Bearer " + SECRET.decode()}
OPERATOR_AUTH = {"Authorization": "Bearer " + OPERATOR.decode()}


def fmf_info(n_items: int = 30, **config: object) -> ProtocolInfo:
    cfg = {"epochs": 3, "k": 4, "factors": 3, **config}
    return ProtocolInfo("fmf-ldp", n_items, FMFConfig(**cfg))  # type: ignore[arg-type]


def dplcf_info(n_items: int = 20, **config: object) -> ProtocolInfo:
    cfg = {"neighbours": 3, **config}
    return ProtocolInfo("dplcf-sp", n_items, LocalItemCFConfig(**cfg))  # type: ignore[arg-type]


def headers(client_id: int, key: bytes = TOKEN_KEY) -> dict[str, str]:
    return {"Authorization": "Bearer " + client_token(key, client_id),
            "X-Dprec-Client": str(client_id), "Content-Type": "application/octet-stream"}


class Stack:
    """A server and a proxy app in this process; the proxy reaches the server by ASGI."""

    def __init__(self, root: Path, info: ProtocolInfo, server: dict | None = None,
                 **proxy: object) -> None:
        import httpx
        self.info = info
        self.server_app = create_server_app(ServerSettings(
            info, root / "server", SECRET, **{"max_batch_bytes": 1 << 20, **(server or {})}))
        self.server = TestClient(self.server_app, base_url="http://server")
        settings = ProxySettings("http://server", root / "proxy", SECRET, TOKEN_KEY,
                                 server_transport=httpx.ASGITransport(self.server_app),
                                 **{"operator_secret": OPERATOR, **proxy})  # type: ignore[arg-type]
        self.proxy_app = create_proxy_app(settings)
        self.proxy = TestClient(self.proxy_app, base_url="http://proxy")

    def start(self, seed: int = 0) -> dict:
        r = self.server.post("/v1/start", headers=AUTH,
                             json={"generator": generator_to_json(np.random.default_rng(seed))})
        assert r.status_code == 200, r.text
        return r.json()

    def submit(self, round: int, client_id: int, body: bytes, **kw: object):
        return self.proxy.post(f"/v1/rounds/{round}/reports", content=body,
                               headers={**headers(client_id), **kw.get("extra", {})})  # type: ignore[arg-type]

    def close(self, round: int):
        return self.proxy.post(f"/v1/rounds/{round}/close", headers=OPERATOR_AUTH)

    def __enter__(self) -> Stack:
        self.proxy.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.proxy.__exit__(*exc)
        self.server.close()
