"""Shards on Ray actors (``pip install 'dprec[ray]'``; ray is imported when a run starts).

Per round:

- the broadcast (V, or nothing for DPLCF) is put in the object store ONCE and every shard
  reads that one copy (zero-copy NumPy on the same node);
- each shard actor runs its blocks in sequence and returns (partial, state, pieces...);
- every piece is summed over the shards in a tree of ``fan_in`` (the sums run on the
  actors themselves, so no extra worker holds a piece), with at most ``max_in_flight``
  sums submitted at a time, never one ``ray.get`` of every shard's arrays in the driver;
- the driver gets the reduced pieces and finishes the round (the server's estimate).

Faults: actors restart (``max_restarts=-1``) and their interrupted calls are retried
(``max_task_retries=-1``); a restarted actor builds its shard again from the run's load
(source, spans, adapter), kept in the object store for the whole run. A round is a pure
function of (the shard's clients as built, round, key, broadcast, the clients' state at the
round's start; the state comes back with the partial and goes into the next round's call),
so a retried round returns the same partial under the same object reference: it replaces
the lost one and is never added twice.
"""

from __future__ import annotations

import os
import resource
import signal
import socket
from collections import deque
from typing import Any

import numpy as np

from dprec.distributed.backend import Pool, ShardedBackend
from dprec.distributed.partials import add_pieces
from dprec.distributed.shards import ClientsSource, Shard
from dprec.errors import DprecError
from dprec.protocol.sharding import RoundPartial, SystemAdapter

__all__ = ["CONNECT_TIMEOUT_S", "RayBackend", "probe_address"]


def _ray() -> Any:
    try:
        import ray
    except ImportError as e:  # pragma: no cover - depends on the install
        raise DprecError("the ray backend needs ray: pip install 'dprec[ray]'") from e
    return ray


CONNECT_TIMEOUT_S = 5.0
"""How long the probe of a ``host:port`` Ray address waits for a TCP connection."""


def probe_address(address: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """DprecError within ``timeout`` seconds when ``address`` (``host:port`` or
    ``ray://host:port``) accepts no TCP connection: ``ray.init`` retries such an address
    for minutes. Other forms (``auto``, ``local``) are left to Ray."""
    rest = address.strip()
    scheme, sep, after = rest.partition("://")
    if sep:
        if scheme != "ray":
            return
        rest = after
    host, colon, port_text = rest.rpartition(":")
    if not colon or not port_text.isdigit() or not host:
        return
    port = int(port_text)
    hint = ("start one with `ray start --head` and pass --ray-address auto (or its "
            "address), or leave --ray-address out for a local Ray")
    if not 0 < port < 65536:
        raise DprecError(f"--ray-address {address}: port {port} is not in 1..65535; {hint}")
    try:
        with socket.create_connection((host.strip("[]"), port), timeout=timeout):
            pass
    except OSError as e:
        why = "timed out" if isinstance(e, TimeoutError) else (e.strerror or str(e))
        raise DprecError(f"no Ray cluster at --ray-address {address} (connecting "
                         f"{why}); {hint}") from None


class ShardWorker:
    """The body of a shard actor (wrapped with ``ray.remote`` when actors start).

    An actor starts empty (the process, its imports, its numba threads) and builds its
    shard from the run's load (source, spans, adapter) on its first round of that run, so
    actors can start before the data exist (:meth:`RayBackend.prestart`) and serve several
    runs. A restarted actor builds the shard again from the same load.
    """

    def __init__(self, threads: int, fault: tuple[int, int, str] | None = None) -> None:
        import numba

        numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))
        self.fault = fault
        self.loaded: tuple[int, int] | None = None
        self.shard: Shard | None = None

    def run_round(self, run: int, index: int, load: list[Any], round: int, key: int,
                  broadcast: Any, state: Any) -> tuple:
        """One round of shard ``index`` of run ``run``; ``load``: [a reference to (source,
        spans, adapter)], boxed so that Ray does not fetch it on every call."""
        if self.fault is not None:  # a fault drill: die once, mid-round, as SIGKILL does
            f_round, f_shard, marker = self.fault
            if (round, index) == (f_round, f_shard) and not os.path.exists(marker):
                open(marker, "w").close()
                os.kill(os.getpid(), signal.SIGKILL)
        if self.loaded != (run, index):
            self.shard = None  # the previous run's clients go before the new ones come
            source, spans, adapter = _ray().get(load[0])
            self.shard = Shard(source, spans, adapter)
            self.loaded = (run, index)
        partial, pieces, new_state = self.shard.run_round(round, key, broadcast, state)
        return (partial, new_state, *pieces)

    def unload(self) -> None:
        """Drop the run's clients (the actor stays up for the next run)."""
        self.shard, self.loaded = None, None

    def add(self, *parts: np.ndarray) -> np.ndarray:
        return add_pieces(*parts)

    def peak_rss_bytes(self) -> int:
        """Peak resident memory of this worker process so far."""
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class RayPool(Pool):
    def __init__(self, backend: RayBackend, run: int, actors: list[Any],
                 sources: list[ClientsSource], spans: list[list[tuple[int, int, int]]],
                 adapter: SystemAdapter) -> None:
        ray = _ray()
        self.ray = ray
        self.backend = backend
        self.adapter = adapter
        self.run = run
        self.actors = actors
        self._loads = [ray.put((src, sp, adapter))  # kept alive for restarted actors
                       for src, sp in zip(sources, spans, strict=True)]
        self._states: list[Any] = [None] * len(self.actors)
        self.n_pieces = adapter.pieces.n_pieces

    def round(self, round: int, key: int, broadcast: Any
              ) -> tuple[dict[str, np.ndarray], RoundPartial]:
        ray = self.ray
        b_ref = ray.put(broadcast)  # once per round, read by every shard
        outs = [a.run_round.options(num_returns=2 + self.n_pieces).remote(
                    self.run, i, [load], round, key, b_ref, st)
                for i, (a, load, st) in enumerate(zip(self.actors, self._loads, self._states,
                                                      strict=True))]
        metas = [o[0] for o in outs]
        self._states = ray.get([o[1] for o in outs])  # values: a restarted actor needs no lost refs
        groups = [[o[2 + i] for o in outs] for i in range(self.n_pieces)]
        del outs  # a shard's piece is freed once it has been summed into its parent
        reduced = self._tree(groups)
        total = RoundPartial()
        for p in ray.get(metas):
            total = total.merge(p)
        pieces = [ray.get(ref) for ref in reduced]
        return self.adapter.pieces.join(pieces), total

    def _tree(self, groups: list[list[Any]]) -> list[Any]:
        """Sum every group of piece references in a tree of ``fan_in``, on the actors,
        with at most ``max_in_flight`` sums outstanding."""
        ray, fan_in = self.ray, self.backend.fan_in
        queues = [deque(g) for g in groups]
        for g in groups:
            g.clear()  # the queues hold the only references
        in_flight: dict[Any, int] = {}
        turn = 0
        while any(len(q) > 1 for q in queues) or in_flight:
            launched = False
            for i, q in enumerate(queues):
                while len(q) >= 2 and len(in_flight) < self.backend.max_in_flight:
                    parts = [q.popleft() for _ in range(min(fan_in, len(q)))]
                    ref = self.actors[turn % len(self.actors)].add.remote(*parts)
                    turn += 1
                    in_flight[ref] = i
                    launched = True
            if in_flight and not launched or len(in_flight) >= self.backend.max_in_flight:
                done, _ = ray.wait(list(in_flight), num_returns=1)
                queues[in_flight.pop(done[0])].append(done[0])
        return [q[0] for q in queues]

    def states(self) -> list[Any]:
        return list(self._states)

    def worker_peaks(self) -> list[int]:
        """Peak resident bytes of every shard worker so far."""
        return self.ray.get([a.peak_rss_bytes.remote() for a in self.actors])

    def close(self) -> None:
        self.backend.peaks = self.worker_peaks()
        if self.backend.keep_warm:
            self.ray.get([a.unload.remote() for a in self.actors])
        else:
            self.backend.release()
        self.actors = []
        self._loads = []


class RayBackend(ShardedBackend):
    """Shards on Ray actors: a running cluster (``address``, e.g. "auto" after
    ``ray start --head``) or a local Ray started here with this machine's CPUs.

    ``shards``: default one per CPU of the cluster. ``cpus_per_shard``: CPUs each actor
    reserves (and numba threads it uses). ``fan_in``, ``max_in_flight``: the reduction
    tree. ``init``: extra ``ray.init`` arguments for a local Ray (e.g. num_cpus,
    object_store_memory). ``fault``: (round, shard, marker file): that shard's worker kills
    itself once in that round (fault drills and tests).

    Actors: :meth:`prestart` starts them before the data exist (their start-up, about 2 s
    of imports per worker, then overlaps the data loading); a run adopts them. With
    ``keep_warm`` they stay up between runs (seeds, fits) until :meth:`close`, which then
    must be called (``with RayBackend(...) as b:``); without it a run's actors stop with
    the run.
    """

    name = "ray"

    def __init__(self, address: str | None = None, shards: int | None = None, *,
                 cpus_per_shard: int = 1, fan_in: int = 2, max_in_flight: int = 8,
                 init: dict[str, Any] | None = None,
                 fault: tuple[int, int, str] | None = None, keep_warm: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(shards, **kwargs)
        if fan_in < 2 or max_in_flight < 1 or cpus_per_shard < 1:
            raise DprecError("fan_in must be >= 2, max_in_flight >= 1, cpus_per_shard >= 1")
        self.address = address
        self.cpus_per_shard = int(cpus_per_shard)
        self.fan_in = int(fan_in)
        self.max_in_flight = int(max_in_flight)
        self.init = dict(init or {})
        self.fault = fault
        self.keep_warm = bool(keep_warm)
        self.peaks: list[int] = []
        self._started = False
        self._actors: list[Any] = []
        self._runs = 0

    def _connect(self) -> Any:
        ray = _ray()
        if not ray.is_initialized():
            if self.address is not None:
                probe_address(self.address)
            kwargs = {"include_dashboard": False, "log_to_driver": False, **self.init}
            try:
                ray.init(address=self.address, **kwargs)
            except (ConnectionError, RuntimeError, ValueError) as e:
                where = "start a local Ray" if self.address is None else \
                    f"join the Ray cluster at {self.address!r}"
                raise DprecError(f"could not {where} ({e}); start one with `ray start "
                                 "--head` and pass --ray-address auto, or leave "
                                 "--ray-address out for a local Ray") from None
            self._started = True
        return ray

    def default_shards(self) -> int:
        cpus = int(self._connect().cluster_resources().get("CPU", 1))
        return max(1, cpus // self.cpus_per_shard)

    def prestart(self, shards: int | None = None) -> None:
        """Start the actors of ``shards`` shards (default: the backend's) now; a later run
        with that many shards adopts them. Returns at once: the workers boot meanwhile."""
        ray = self._connect()
        n = int(shards or self.shards or self.default_shards())
        if len(self._actors) == n:
            return
        self.release()  # a different count: their CPU shares differ, start afresh
        # more shards than CPUs: each actor reserves its share, so that all of them start
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        share = min(float(self.cpus_per_shard), cpus / n)
        actor = ray.remote(ShardWorker).options(
            num_cpus=share, max_restarts=-1, max_task_retries=-1)
        self._actors = [actor.remote(max(1, int(share)), self.fault) for _ in range(n)]

    def release(self) -> None:
        """Stop the actors (a running pool's included)."""
        ray = _ray()
        for a in self._actors:
            ray.kill(a)
        self._actors = []

    def _open(self, sources: list[ClientsSource], spans: list[list[tuple[int, int, int]]],
              adapter: SystemAdapter) -> Pool:
        self.prestart(len(sources))
        self._runs += 1
        return RayPool(self, self._runs, list(self._actors), sources, spans, adapter)

    def close(self) -> None:
        """Stop the actors, and the local Ray this backend started (a joined cluster
        stays up)."""
        if self._actors:
            self.release()
        if self._started:
            _ray().shutdown()
            self._started = False

    def __enter__(self) -> RayBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
