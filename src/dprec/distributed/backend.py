"""Sharded backends: executors of the engine's rounds with the clients in shards.

The round loop is the engine's (:func:`~dprec.protocol.engine.run_rounds`: start, rounds,
event log, round records, hook); a :class:`ShardedBackend` is a transport whose
:meth:`~ShardedBackend.executor` does one round's work. The driver plays the server and the
proxy; the clients run in shards (:class:`~dprec.distributed.shards.Shard`): in this
process (:class:`LocalBackend`) or on Ray actors
(:class:`~dprec.distributed.ray_backend.RayBackend`). Per round the executor draws one key
from the run's generator, hands (round, key, broadcast) to every shard, reduces the shards'
integer partial sums, applies the proxy's threshold to the number of distinct senders and
lets the server finish the round from the sums: what the engine's
:class:`~dprec.protocol.engine.Pipeline` does with a
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
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

from dprec.distributed.layout import BLOCK_SIZE, BlockLayout
from dprec.distributed.partials import tree_sum
from dprec.distributed.shards import ClientsSource, Shard, adapter_for
from dprec.errors import DprecError
from dprec.iteration import IterationHook
from dprec.privacy.events import EventLog
from dprec.protocol.engine import (
    Clients,
    PassThrough,
    ProtocolRun,
    Proxy,
    RoleTimer,
    RoundExecutor,
    RoundResult,
    Sent,
    Server,
    ShufflingProxy,
    Transport,
    forwarded_batch_sizes,
    run_rounds,
)
from dprec.protocol.sharding import RoundPartial, SystemAdapter

log = logging.getLogger(__name__)

__all__ = ["InMemory", "LocalBackend", "Population", "ShardedBackend", "ShardedRounds"]


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


class ShardedRounds(RoundExecutor):
    """One run's rounds over shards of client blocks: the pool opens at the first round,
    its clients' final state goes back to the population when the run completes."""

    def __init__(self, backend: ShardedBackend, server: Server, population: Population,
                 proxy: Proxy) -> None:
        self.adapter = adapter_for(server, population.n_users, proxy, population.k,
                                   backend.max_piece_bytes)
        self.backend, self.server, self.population, self.proxy = (backend, server,
                                                                  population, proxy)
        layout = BlockLayout(population.n_users, backend.block_size)
        self.blocks = layout.shard_blocks(backend.shards or backend.default_shards())
        self.layout = layout
        self.users = [layout.users(b) for b in self.blocks]
        self.upload = 0
        self.pool: Pool | None = None

    def round(self, broadcast: Any, round: int, rng: np.random.Generator,
              timer: RoleTimer) -> RoundResult:
        if self.pool is None:
            self.pool = self.backend._open([self.population.source(u) for u in self.users],
                                           [self.layout.spans(b) for b in self.blocks],
                                           self.adapter)
        key = int(rng.integers(2**63))
        sums, total = timer.call("clients", self.pool.round, round, key, broadcast)
        self.backend.last_round = total
        self.upload += total.upload_bytes
        batches = _batches(self.proxy, total.senders)
        new = None
        if batches:
            new = timer.call("server", self.adapter.finish, self.server, sums, total, round)
        else:
            log.info("round %d: %d senders, below the proxy's threshold", round,
                     total.senders)
        del sums
        if new is None:
            return RoundResult(None, [], total.senders)
        if isinstance(self.proxy, ShufflingProxy):
            self.proxy.record_forwarded(total.senders, batches)
        sent = [Sent(event, np.sort(np.concatenate(parts)), count, unit)  # type: ignore[arg-type]
                for (event, count, unit), parts in total.sent.items()]
        return RoundResult(new, sent, total.senders)

    def finish(self) -> None:
        assert self.pool is not None
        self.population.finish(self.users, self.pool.states(), self.upload)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()


class ShardedBackend(Transport):
    """Executes the engine's rounds over shards of client blocks (subclasses say where
    shards live). Only partial sums travel, so :meth:`carry` is the identity.

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

    def carry(self, message: Any) -> Any:
        return message

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

    def executor(self, server: Server, clients: Clients | Population,
                 proxy: Proxy) -> ShardedRounds:
        """The rounds of ``clients`` (held here, split into shards) or of a
        :class:`Population` (built in the shards) on this backend."""
        population = clients if isinstance(clients, Population) else InMemory(clients)
        return ShardedRounds(self, server, population, proxy)

    def run_population(self, server: Server, population: Population, rounds: int,
                       rng: np.random.Generator, log_: EventLog, proxy: Proxy | None = None,
                       on_iteration: IterationHook | None = None) -> ProtocolRun:
        """:func:`~dprec.protocol.engine.run_protocol` over ``population`` in shards."""
        return run_rounds(self.executor(server, population, proxy or PassThrough()), rounds,
                          rng, log_, on_iteration)


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
