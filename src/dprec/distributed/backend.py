"""The sharded round loop, written once for both backends.

The driver plays the server and the proxy; the clients run in shards
(:class:`~dprec.distributed.shards.Shard`): in this process (:class:`LocalBackend`) or on
Ray actors (:class:`~dprec.distributed.ray_backend.RayBackend`). Per round the driver draws
one key from the run's generator, hands (round, key, broadcast) to every shard, reduces the
shards' integer partial sums, applies the proxy's threshold to the number of distinct
senders, lets the server finish the round from the sums, and appends the forwarded senders'
events to the log: what :func:`~dprec.protocol.engine.run_protocol` does with a
:class:`~dprec.protocol.engine.ShufflingProxy`, without the shuffle (sums have no order; see
:mod:`dprec.distributed.partials`). The events are the engine's: a shuffle over all of the
round's senders (the one sum the server step reads), or over the proxy's smallest batch
when it forwards in batches.

Randomness (:mod:`dprec.distributed.layout`): the server's start and the proxy's start draw
from the run's generator as in the engine; each round's clients draw from per-block streams
of (key, round, block). This is NOT the engine's stream (one generator across all clients),
so a sharded run is a different, equally valid draw than ``run_protocol`` without a
backend; it is identical across backends and shard counts.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dprec.distributed.layout import BLOCK_SIZE, BlockLayout
from dprec.distributed.partials import RoundPartial, tree_sum
from dprec.distributed.shards import ClientsSource, Shard, SystemAdapter, adapter_for
from dprec.errors import DprecError
from dprec.privacy.events import EventLog
from dprec.protocol.engine import (
    Backend,
    Clients,
    PassThrough,
    ProtocolRun,
    Proxy,
    RoundRecord,
    Server,
    ShufflingProxy,
    forwarded_batch_sizes,
)

log = logging.getLogger(__name__)

__all__ = ["InMemory", "LocalBackend", "Population", "ShardedBackend", "make_backend"]


class Population(ABC):
    """The clients of a sharded run, as each shard builds its part where it runs."""

    n_users: int
    k: int | None = None
    """Reports per client and round (FMF-LDP), else None."""

    @abstractmethod
    def source(self, users: np.ndarray) -> ClientsSource:
        """A picklable builder of the clients ``users`` (global ids, in this order)."""

    def finish(  # noqa: B027 - optional hook
            self, users: list[np.ndarray], states: list[Any], upload_bytes: int) -> None:
        """Called once after the run with each shard's users and final client state."""


@dataclass(frozen=True)
class _Ready:
    clients: Clients

    def __call__(self) -> Clients:
        return self.clients


class InMemory(Population):
    """A population the driver holds (``dprec run``): shards get subsets of it, and its
    counters and ledgers get the shards' final state back."""

    def __init__(self, clients: Clients) -> None:
        if not hasattr(clients, "subset") or not hasattr(clients, "ids"):
            raise DprecError(f"{type(clients).__name__} cannot be split into shards")
        self.clients = clients
        self.n_users = int(clients.ids.size)  # type: ignore[attr-defined]
        self.k = getattr(clients, "k", None)

    def source(self, users: np.ndarray) -> ClientsSource:
        return _Ready(self.clients.subset(users))  # type: ignore[attr-defined]

    def finish(self, users: list[np.ndarray], states: list[Any], upload_bytes: int) -> None:
        c = self.clients
        if hasattr(c, "upload_bytes"):
            c.upload_bytes += upload_bytes
        if hasattr(c, "state") and states and states[0] is not None:
            full = c.state()
            for u, st in zip(users, states, strict=True):
                for name, values in st.items():
                    full[name][u] = values
            c.restore(full)


class Pool(ABC):
    """Where the shards live for one run."""

    @abstractmethod
    def round(self, round: int, key: int, broadcast: Any
              ) -> tuple[dict[str, np.ndarray], RoundPartial]:
        """Run every shard's round; the reduced sums and the merged partial."""

    @abstractmethod
    def states(self) -> list[Any]:
        """Each shard's client state after the last round."""

    def close(self) -> None:  # noqa: B027 - optional
        """Release the shards."""


class LocalPool(Pool):
    """Every shard in this process, one after another; pieces summed in a tree."""

    def __init__(self, sources: list[ClientsSource], spans: list[list[tuple[int, int, int]]],
                 adapter: SystemAdapter) -> None:
        self.adapter = adapter
        self.shards = [Shard(src, sp, adapter) for src, sp in zip(sources, spans, strict=True)]
        self._states: list[Any] = [None] * len(self.shards)

    def round(self, round: int, key: int, broadcast: Any
              ) -> tuple[dict[str, np.ndarray], RoundPartial]:
        total = RoundPartial()
        pieces: list[list[np.ndarray]] = []
        for s, shard in enumerate(self.shards):
            partial, p, self._states[s] = shard.run_round(round, key, broadcast,
                                                          self._states[s])
            total = total.merge(partial)
            pieces.append(p)
        reduced = [tree_sum([p[i] for p in pieces]) for i in range(len(pieces[0]))]
        return self.adapter.pieces.join(reduced), total

    def states(self) -> list[Any]:
        return [self.adapter.state(s.clients) if st is None else st
                for s, st in zip(self.shards, self._states, strict=True)]


class ShardedBackend(Backend):
    """The round loop over shards of client blocks (subclasses say where shards live).

    ``shards``: number of shards (None: the backend's default). ``block_size``: clients
    per block (the unit of sharding and randomness; changing it changes the draw).
    ``max_piece_bytes``: the largest piece of a partial sum that travels or is reduced.
    """

    name = "sharded"

    def __init__(self, shards: int | None = None, block_size: int = BLOCK_SIZE,
                 max_piece_bytes: int = 256 * 2**20) -> None:
        if shards is not None and (isinstance(shards, bool) or int(shards) != shards
                                   or shards < 1):
            raise DprecError(f"shards must be an integer >= 1, got {shards}")
        BlockLayout(0, block_size)  # validates block_size
        self.shards = None if shards is None else int(shards)
        self.block_size = int(block_size)
        self.max_piece_bytes = int(max_piece_bytes)
        self.last_round: RoundPartial | None = None

    def prestart(self, shards: int | None = None) -> None:  # noqa: B027 - optional
        """Start the shards' workers ahead of a run (nothing to start in this process)."""

    def close(self) -> None:  # noqa: B027 - optional
        """Release what the backend holds across runs (a Ray it started, its actors)."""

    @abstractmethod
    def _open(self, sources: list[ClientsSource], spans: list[list[tuple[int, int, int]]],
              adapter: SystemAdapter) -> Pool:
        """Start the shards."""

    @abstractmethod
    def default_shards(self) -> int:
        """Shards when none were asked for."""

    def run(self, server: Server, clients: Clients, rounds: int, rng: np.random.Generator,
            log_: EventLog, proxy: Proxy | None,
            on_round: Callable[[int, Any], None] | None) -> ProtocolRun:
        return self.run_population(server, InMemory(clients), rounds, rng, log_, proxy,
                                   on_round)

    def run_population(self, server: Server, population: Population, rounds: int,
                       rng: np.random.Generator, log_: EventLog, proxy: Proxy | None = None,
                       on_round: Callable[[int, Any], None] | None = None) -> ProtocolRun:
        """:func:`~dprec.protocol.engine.run_protocol` over ``population`` in shards."""
        if int(rounds) != rounds or rounds < 1:
            raise DprecError(f"rounds must be an integer >= 1, got {rounds}")
        adapter = adapter_for(server, population.n_users, proxy, population.k,
                              self.max_piece_bytes)
        proxy = proxy or PassThrough()
        layout = BlockLayout(population.n_users, self.block_size)
        blocks = layout.shard_blocks(self.shards or self.default_shards())
        users = [layout.users(b) for b in blocks]
        seconds = {"clients": 0.0, "proxy": 0.0, "server": 0.0}
        t = time.perf_counter()
        broadcast = server.start(rng)
        proxy.start(rng)
        seconds["server"] += time.perf_counter() - t
        run = ProtocolRun(broadcast, seconds=seconds)
        pool = self._open([population.source(u) for u in users],
                          [layout.spans(b) for b in blocks], adapter)
        upload = 0
        try:
            for r in range(int(rounds)):
                key = int(rng.integers(2**63))
                t = time.perf_counter()
                sums, total = pool.round(r, key, broadcast)
                seconds["clients"] += time.perf_counter() - t
                self.last_round = total
                upload += total.upload_bytes
                new = None
                batches = _batches(proxy, total.senders)
                if batches:
                    t = time.perf_counter()
                    new = adapter.finish(server, sums, total, r)
                    seconds["server"] += time.perf_counter() - t
                else:
                    log.info("round %d: %d senders, below the proxy's threshold", r,
                             total.senders)
                del sums
                if new is None:
                    run.rounds.append(RoundRecord(r, False, total.senders))
                    continue
                if isinstance(proxy, ShufflingProxy):
                    proxy.record_forwarded(total.senders, batches)
                for (event, count, unit), parts in total.sent.items():
                    log_.record(r, proxy.account(event), np.sort(np.concatenate(parts)),
                                count=count, unit=unit)  # type: ignore[arg-type]
                broadcast = new
                run.broadcast = new
                run.rounds.append(RoundRecord(r, True, total.senders))
                if on_round is not None:
                    on_round(r, new)
            population.finish(users, pool.states(), upload)
        finally:
            pool.close()
        return run


def _batches(proxy: Proxy, senders: int) -> list[int]:
    """Senders per batch the proxy forwards this round ([] when it refuses the round).

    The driver's server step sees one sum of every forwarded report, a post-processing of
    one shuffle of all ``senders``; a :class:`ShufflingProxy` that forwards in batches
    (``batch_senders``) is accounted for over its batches, as in the engine
    (:func:`~dprec.protocol.engine.forwarded_batch_sizes`), so that a sharded run states
    the deployment's guarantee, not a stronger one.
    """
    if isinstance(proxy, ShufflingProxy):
        return forwarded_batch_sizes(senders, proxy.threshold, proxy.batch_senders)
    return [senders] if senders >= 1 else []


class LocalBackend(ShardedBackend):
    """Every shard in this process (one shard by default): the reference for Ray."""

    name = "local"

    def default_shards(self) -> int:
        return 1

    def _open(self, sources: list[ClientsSource], spans: list[list[tuple[int, int, int]]],
              adapter: SystemAdapter) -> Pool:
        return LocalPool(sources, spans, adapter)


def make_backend(name: str, address: str | None = None, shards: int | None = None,
                 keep_warm: bool = False) -> ShardedBackend:
    """``local`` or ``ray`` (``address``: a running cluster, e.g. "auto"; None starts a
    local Ray with this machine's CPUs; ``keep_warm``: Ray actors serve every run until
    ``close()``)."""
    if name == "local":
        if address is not None:
            raise DprecError("--ray-address needs --backend ray")
        return LocalBackend(shards)
    if name == "ray":
        from dprec.distributed.ray_backend import RayBackend
        return RayBackend(address=address, shards=shards, keep_warm=keep_warm)
    raise DprecError(f"backend must be local or ray, got {name!r}")
