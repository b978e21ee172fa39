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
(``max_task_retries=-1``). A round is a pure function of (the shard's clients as built,
round, key, broadcast, the clients' state at the round's start; the state comes back with
the partial and goes into the next round's call), so a retried round returns the same
partial under the same object reference: it replaces the lost one and is never added twice.
"""

from __future__ import annotations

import os
import resource
import signal
from collections import deque
from typing import Any

import numpy as np

from dprec.distributed.backend import Pool, ShardedBackend
from dprec.distributed.partials import RoundPartial, add_pieces
from dprec.distributed.shards import ClientsSource, Shard, SystemAdapter
from dprec.errors import DprecError

__all__ = ["RayBackend"]


def _ray() -> Any:
    try:
        import ray
    except ImportError as e:  # pragma: no cover - depends on the install
        raise DprecError("the ray backend needs ray: pip install 'dprec[ray]'") from e
    return ray


class ShardWorker:
    """The body of a shard actor (wrapped with ``ray.remote`` when a pool opens)."""

    def __init__(self, index: int, source: ClientsSource, spans: list[tuple[int, int, int]],
                 adapter: SystemAdapter, threads: int,
                 fault: tuple[int, int, str] | None = None) -> None:
        import numba

        numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))
        self.index = index
        self.fault = fault
        self.shard = Shard(source, spans, adapter)

    def run_round(self, round: int, key: int, broadcast: Any, state: Any) -> tuple:
        if self.fault is not None:  # a fault drill: die once, mid-round, as SIGKILL does
            f_round, f_shard, marker = self.fault
            if (round, self.index) == (f_round, f_shard) and not os.path.exists(marker):
                open(marker, "w").close()
                os.kill(os.getpid(), signal.SIGKILL)
        partial, pieces, new_state = self.shard.run_round(round, key, broadcast, state)
        return (partial, new_state, *pieces)

    def add(self, *parts: np.ndarray) -> np.ndarray:
        return add_pieces(*parts)

    def peak_rss_bytes(self) -> int:
        """Peak resident memory of this worker process so far."""
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class RayPool(Pool):
    def __init__(self, backend: RayBackend, sources: list[ClientsSource],
                 spans: list[list[tuple[int, int, int]]], adapter: SystemAdapter) -> None:
        ray = _ray()
        self.ray = ray
        self.backend = backend
        self.adapter = adapter
        # more shards than CPUs: each actor reserves its share, so that all of them start
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        share = min(float(backend.cpus_per_shard), cpus / max(1, len(sources)))
        actor = ray.remote(ShardWorker).options(
            num_cpus=share, max_restarts=-1, max_task_retries=-1)
        self._sources = [ray.put(src) for src in sources]  # kept alive for restarts
        self.actors = [actor.remote(i, src, sp, adapter, max(1, int(share)), backend.fault)
                       for i, (src, sp) in enumerate(zip(self._sources, spans, strict=True))]
        self._states: list[Any] = [None] * len(self.actors)
        self.n_pieces = adapter.pieces.n_pieces

    def round(self, round: int, key: int, broadcast: Any
              ) -> tuple[dict[str, np.ndarray], RoundPartial]:
        ray = self.ray
        b_ref = ray.put(broadcast)  # once per round, read by every shard
        outs = [a.run_round.options(num_returns=2 + self.n_pieces).remote(
                    round, key, b_ref, st) for a, st in zip(self.actors, self._states,
                                                            strict=True)]
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
        for a in self.actors:
            self.ray.kill(a)
        self.actors = []


class RayBackend(ShardedBackend):
    """Shards on Ray actors: a running cluster (``address``, e.g. "auto" after
    ``ray start --head``) or a local Ray started here with this machine's CPUs.

    ``shards``: default one per CPU of the cluster. ``cpus_per_shard``: CPUs each actor
    reserves (and numba threads it uses). ``fan_in``, ``max_in_flight``: the reduction
    tree. ``init``: extra ``ray.init`` arguments for a local Ray (e.g. num_cpus,
    object_store_memory). ``fault``: (round, shard, marker file): that shard's worker kills
    itself once in that round (fault drills and tests).
    """

    name = "ray"

    def __init__(self, address: str | None = None, shards: int | None = None, *,
                 cpus_per_shard: int = 1, fan_in: int = 2, max_in_flight: int = 8,
                 init: dict[str, Any] | None = None,
                 fault: tuple[int, int, str] | None = None, **kwargs: Any) -> None:
        super().__init__(shards, **kwargs)
        if fan_in < 2 or max_in_flight < 1 or cpus_per_shard < 1:
            raise DprecError("fan_in must be >= 2, max_in_flight >= 1, cpus_per_shard >= 1")
        self.address = address
        self.cpus_per_shard = int(cpus_per_shard)
        self.fan_in = int(fan_in)
        self.max_in_flight = int(max_in_flight)
        self.init = dict(init or {})
        self.fault = fault
        self.peaks: list[int] = []
        self._started = False

    def _connect(self) -> Any:
        ray = _ray()
        if not ray.is_initialized():
            kwargs = {"include_dashboard": False, "log_to_driver": False, **self.init}
            ray.init(address=self.address, **kwargs)
            self._started = True
        return ray

    def default_shards(self) -> int:
        cpus = int(self._connect().cluster_resources().get("CPU", 1))
        return max(1, cpus // self.cpus_per_shard)

    def _open(self, sources: list[ClientsSource], spans: list[list[tuple[int, int, int]]],
              adapter: SystemAdapter) -> Pool:
        self._connect()
        return RayPool(self, sources, spans, adapter)

    def close(self) -> None:
        """Shut down the local Ray this backend started (a joined cluster stays up)."""
        if self._started:
            _ray().shutdown()
            self._started = False
