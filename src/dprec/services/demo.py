"""``dprec serve demo``: the browser demo of issue 34 §2 on 127.0.0.1.

:class:`Demo` starts, all on loopback: a static page server (the page of ``clients/js/demo``
and its one bundled script, :mod:`dprec.services.demo_page`), then the dp-pop server and the
shuffling proxy (:class:`~dprec.services.launch.Loopback`) answering the page's origin alone
with CORS headers, then a *crowd*: ``crowd`` device clients (the Python SDK,
:class:`~dprec.client.DeviceClient`) reporting the histories of the catalogue's first users,
so that a round can reach ``min_honest`` reports. A browser takes one of ``seats`` client
ids (``POST /enrol`` on the page's server hands out the next id with its token: a demo's
enrolment, standing in for a real sign-up) and reports through the TypeScript SDK.

The round is closed (the proxy's operator, held here) once ``close_at`` reports were accepted
(default: the crowd and one person; the proxy publishes no count, so a page tells the
demo, ``POST /reported``, once its report was accepted), so the released counts reach the
page; the proxy itself refuses to release fewer than ``min_honest`` (docs/secure_sum.md).
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import httpx
import numpy as np

from dprec.data.dataset import Dataset
from dprec.errors import DprecError
from dprec.services.auth import client_token
from dprec.services.demo_page import PageServer
from dprec.services.launch import Loopback, ServiceProcess
from dprec.systems.deployable import demo_system

__all__ = ["Demo", "DemoSettings", "catalogue_of", "load_catalogue", "round_calibration"]

if TYPE_CHECKING:
    from collections.abc import Callable

    from dprec.client import RandomSource

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DemoSettings:
    """What ``dprec serve demo`` is started with."""

    data_dir: Path | None = None
    """An ML-100K folder (GroupLens ``u.data/u.user/u.item``); None: ``DPREC_DATA`` or the
    cache (:func:`dprec.data.fetch.fetch_ml100k`)."""
    crowd: int = 200
    """Python device clients reporting the first users' histories."""
    seats: int = 20
    """Browser clients that may join (client ids ``crowd .. crowd + seats - 1``)."""
    epsilon: float = 1.0
    k: int = 10
    """Most films one device contributes (dp-pop's L1 bound)."""
    budget: float = 3.0
    """Each crowd device's total budget."""
    close_at: int | None = None
    """Reports held when the round is closed; None: the crowd and one browser."""
    page_dir: Path | None = None
    """The page's folder; None: ``clients/js/demo`` of this checkout."""
    port: int = 0
    """The page's port (0: any free one; the services always take free ones)."""

    def __post_init__(self) -> None:
        for name in ("crowd", "seats"):
            v = getattr(self, name)
            if isinstance(v, bool) or int(v) != v or v < 1:
                raise DprecError(f"--{name} must be an integer >= 1, got {v!r}")
        if isinstance(self.port, bool) or not 0 <= int(self.port) <= 65535:
            raise DprecError(f"--port must be in 0..65535 (0: any free port), got {self.port}")
        demo_system().check_settings({"epsilon": str(self.epsilon), "k": str(self.k),
                                      "n_clients": str(self.n_clients),
                                      "min_honest": str(self.crowd)})
        if self.close_at is not None and not 1 <= self.close_at <= self.n_clients:
            raise DprecError(f"--close-at must be in 1..{self.n_clients} (crowd + seats), "
                             f"got {self.close_at}")

    @property
    def n_clients(self) -> int:
        return self.crowd + self.seats


def load_catalogue(data_dir: Path | None) -> Dataset:
    """ML-100K through dprec's loader: from ``data_dir`` as it is (a small fixture in the
    GroupLens layout loads too), else the checked copy (``DPREC_DATA`` or the cache)."""
    from dprec.data.fetch import fetch_and_load_ml100k
    from dprec.data.loaders.movielens import load_ml100k

    ds = load_ml100k(data_dir) if data_dir is not None else fetch_and_load_ml100k()
    if ds.item_features is None or "title" not in ds.item_features:
        raise DprecError("the catalogue needs the films' titles: give ML-100K with u.item")
    return ds


def catalogue_of(ds: Dataset) -> list[dict[str, Any]]:
    """The films as the page lists them: item index (the protocol's coordinate), title,
    year (None if unknown)."""
    titles = ds.item_features["title"].astype(str).to_numpy()  # type: ignore[index]
    years = ds.item_features["year"].to_numpy() if "year" in ds.item_features else None  # type: ignore[operator,index]
    out = []
    for i, title in enumerate(titles):
        year = None if years is None or years[i] is None or years[i] != years[i] else int(years[i])
        out.append({"id": i, "title": title, "year": year})
    return out


def round_calibration(params: dict[str, str], n_items: int) -> dict[str, Any]:
    """The calibration the page's SDK takes for the one round it was built for: the demo
    system's ``page_round`` (:func:`dprec.systems.deployable.demo_system`)."""
    return demo_system().page_round(params, n_items)


class Demo:
    """The page server, the services and the crowd; :meth:`stop` (or leaving the ``with``
    block) stops them all."""

    def __init__(self, settings: DemoSettings, root: Path | None = None,
                 ds: Dataset | None = None,
                 crowd_source: Callable[[int], RandomSource] | None = None) -> None:
        """``crowd_source``: a test hook only, the randomness of crowd device ``user`` (a
        test that knows a device's generator can replay its noise share); None, as ``dprec
        serve demo`` runs: each device's own :class:`~dprec.client.SecureSource`."""
        self.settings = settings
        self.crowd_source = crowd_source
        self.ds = ds if ds is not None else load_catalogue(settings.data_dir)
        if self.ds.n_users < settings.crowd:
            raise DprecError(f"--crowd {settings.crowd} is more than the catalogue's "
                             f"{self.ds.n_users} users")
        self.page = PageServer(settings.page_dir, settings.port)  # refuses a missing bundle
        self.loopback = Loopback(root)
        self.server: ServiceProcess | None = None
        self.proxy: ServiceProcess | None = None
        self._next_seat = settings.crowd
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.crowd_reported = 0
        self.seats_reported: set[int] = set()
        self.closed: dict[str, Any] | None = None
        """The proxy's answer to the close (None before)."""
        self._closed = threading.Event()
        self.crowd_errors: list[str] = []

    @property
    def params(self) -> dict[str, str]:
        s = self.settings
        return {"epsilon": str(s.epsilon), "k": str(s.k), "n_clients": str(s.n_clients),
                "min_honest": str(s.crowd)}

    def start(self, crowd: bool = True) -> Demo:
        """Start the page server, then the services (CORS for the page's origin), the
        protocol, the closer and (with ``crowd``) the crowd's reports."""
        if self.server is not None:
            return self
        s = self.settings
        cors = ["--cors-origin", self.page.origin]
        self.server = self.loopback.server(demo_system().SYSTEM, self.ds.n_items, self.params,
                                           extra=cors, wait=False)
        self.proxy = self.loopback.proxy(self.server.url, s.crowd, batch_senders=s.n_clients,
                                         extra=cors, wait=False)
        self.server.wait_ready()
        self.proxy.wait_ready()
        started = httpx.post(self.server.url + "/v1/start", json={}, timeout=60,
                             headers=self._auth(self.loopback.secret))
        if started.status_code != 200:
            raise DprecError(f"the server did not start the protocol: {started.text[:300]}")
        self.page.serve(self._page_config(), self.enrol, self.seat_reported)
        self._spawn(self._close_when_ready)
        if crowd:
            self.start_crowd()
        return self

    def start_crowd(self) -> None:
        """The crowd's devices report in the background (two at a time)."""
        self._spawn(self._report_crowd)

    def _page_config(self) -> dict[str, Any]:
        assert self.server is not None and self.proxy is not None
        return {"server": self.server.url, "proxy": self.proxy.url,
                "crowd": self.settings.crowd, "seats": self.settings.seats,
                "round": round_calibration(self.params, self.ds.n_items),
                "items": catalogue_of(self.ds)}

    @staticmethod
    def _auth(secret: bytes) -> dict[str, str]:
        return {"Authorization": "Bearer " + secret.decode()}

    def enrol(self) -> dict[str, Any] | None:
        """The next browser seat (client id and token), None once all are taken."""
        with self._lock:
            if self._next_seat >= self.settings.n_clients:
                return None
            cid = self._next_seat
            self._next_seat += 1
        return {"client_id": cid, "token": client_token(self.loopback.token_key, cid)}

    def seat_reported(self, client_id: int) -> None:
        """A page's word that its seat's report was accepted (a hint for the closer; the
        proxy alone decides what it holds and releases)."""
        with self._lock:
            if self.settings.crowd <= client_id < self._next_seat:
                self.seats_reported.add(client_id)

    def crowd_history(self, user: int) -> np.ndarray:
        """User ``user``'s films as a 0/1 vector (the crowd device's history)."""
        row = self.ds.binary()[user]
        x = np.zeros(self.ds.n_items)
        x[row.indices] = 1.0
        return x

    def _report_crowd(self) -> None:
        from dprec.client import DeviceClient

        assert self.server is not None and self.proxy is not None
        srv, prx = self.server.url, self.proxy.url

        def one(user: int) -> None:
            if self._stop.is_set():
                return
            device = DeviceClient(user, client_token(self.loopback.token_key, user), srv, prx,
                                  self.loopback.root / "crowd" / str(user),
                                  self.settings.budget,
                                  source=None if self.crowd_source is None
                                  else self.crowd_source(user))
            try:
                device.report(self.crowd_history(user))
                with self._lock:
                    self.crowd_reported += 1
            except DprecError as e:
                self.crowd_errors.append(f"device {user}: {e}")
                log.warning("crowd device %d: %s", user, e)

        with ThreadPoolExecutor(2) as pool:
            list(pool.map(one, range(self.settings.crowd)))

    def held(self) -> int:
        """Reports accepted so far, as far as the demo knows (the proxy publishes no count):
        the crowd's and the seats whose pages said so."""
        with self._lock:
            return self.crowd_reported + len(self.seats_reported)

    def _close_when_ready(self) -> None:
        """Close round 0 once ``close_at`` reports are held (the proxy's operator)."""
        assert self.proxy is not None
        target = self.settings.close_at or self.settings.crowd + 1
        while not self._stop.wait(0.5):
            if self.held() < target:
                continue
            try:
                r = httpx.post(self.proxy.url + "/v1/rounds/0/close", timeout=120,
                               headers=self._auth(self.loopback.operator_secret))
            except httpx.HTTPError as e:
                log.warning("the demo's closer: %s", e)
                continue
            log.info("round 0 closed: %s", r.text[:300])
            self.closed = r.json() if r.status_code == 200 else {"status": r.status_code,
                                                                  "detail": r.text[:2000]}
            self._closed.set()
            return

    def wait_closed(self, timeout: float) -> dict[str, Any]:
        """The proxy's answer to the close, once it came (:class:`DprecError` after
        ``timeout`` seconds)."""
        if not self._closed.wait(timeout):
            raise DprecError(f"the round was not closed within {timeout:.0f} s: "
                             f"{self.held()} reports heard of, errors {self.crowd_errors[:3]}")
        assert self.closed is not None
        return self.closed

    def released(self) -> tuple[np.ndarray, int, int]:
        """The server's released counts, their contributors, and T, the bound of one
        device's noise share per film that the Prio3 proof enforces (the proxy's
        published validity)."""
        from dprec.client.http import ProxyAPI, ServerAPI

        assert self.server is not None and self.proxy is not None
        server, proxy = ServerAPI(self.server.url), ProxyAPI(self.proxy.url)
        try:
            counts, contributors = demo_system().released(server.artefact("model").data)
            bound = int(proxy.round()["published"]["validity"]["T"])
        finally:
            server.close()
            proxy.close()
        return counts, contributors, bound

    def _spawn(self, target: Any) -> None:
        t = threading.Thread(target=target, daemon=True, name=f"dprec-demo-{target.__name__}")
        t.start()
        self._threads.append(t)

    def stop(self) -> None:
        """Stop the closer, the crowd, the page server and the services (their state goes
        with the launcher's temporary folder)."""
        self._stop.set()
        self.page.stop()
        self.loopback.__exit__(None, None, None)
        for t in self._threads:
            t.join(5)

    def __enter__(self) -> Demo:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
