"""What a shard of a run's clients folds, written once for every system and every backend.

A sharded run (:mod:`dprec.distributed`) splits a round's clients into shards; each shard
folds its clients' messages into integer partial sums (:class:`Pieces`) and a small
:class:`RoundPartial` (who sent, what it cost), and the server makes its next broadcast from
the reduced total. What a shard folds is the system's: a :class:`SystemAdapter` in
``systems/<name>/shard.py``, held by the system's
:class:`~dprec.protocol.deployment.Serving` (``shard_adapter``); the generic one here,
:class:`IntegerSumAdapter`, serves every secure-sum system. Every number that travels is an
integer, so any grouping and order of the reduction gives the same bits.

The random stream of a block of clients is :func:`block_generator` of (the round's key,
round, block): a function of the seed, the round and the block only, never of the shards.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dprec.errors import DprecError
from dprec.protocol.engine import Clients, Proxy, Sent, Server
from dprec.random import derive_generator

__all__ = ["IntegerSumAdapter", "Pieces", "RoundPartial", "SystemAdapter", "block_generator",
           "record_sent"]


def block_generator(key: int, round: int, block: int) -> np.random.Generator:
    """The random stream of block ``block``'s clients in round ``round`` of a run whose
    driver drew ``key`` for that round."""
    return derive_generator(int(key), "client-block", int(round), int(block))


@dataclass(frozen=True)
class Pieces:
    """How a dict of integer arrays is cut into pieces (row chunks of <= ``max_bytes``).

    ``specs``: (name, shape, dtype) of every array, the same on every shard of a round.
    """

    specs: tuple[tuple[str, tuple[int, ...], str], ...]
    max_bytes: int = 256 * 2**20

    def _bounds(self, shape: tuple[int, ...], dtype: str) -> list[tuple[int, int]]:
        rows = shape[0] if shape else 1
        row_bytes = max(1, int(np.prod(shape[1:], dtype=np.int64)) * np.dtype(dtype).itemsize)
        step = max(1, self.max_bytes // row_bytes)
        return [(s, min(rows, s + step)) for s in range(0, rows, step)] or [(0, 0)]

    @property
    def n_pieces(self) -> int:
        return sum(len(self._bounds(shape, dt)) for _, shape, dt in self.specs)

    def split(self, sums: dict[str, np.ndarray]) -> list[np.ndarray]:
        """The pieces of ``sums`` (views), in a fixed order."""
        out = []
        for name, shape, dtype in self.specs:
            a = sums[name]
            if a.shape != shape or a.dtype != np.dtype(dtype):
                raise DprecError(f"partial {name!r} must be {shape} {dtype}, got "
                                 f"{a.shape} {a.dtype}")
            out.extend(a[s:e] for s, e in self._bounds(shape, dtype))
        return out

    def join(self, pieces: list[np.ndarray]) -> dict[str, np.ndarray]:
        """The arrays back from their (reduced) pieces."""
        out, at = {}, 0
        for name, shape, dtype in self.specs:
            n = len(self._bounds(shape, dtype))
            parts = pieces[at:at + n]
            out[name] = parts[0] if n == 1 else np.concatenate(parts)
            at += n
        return out


@dataclass
class RoundPartial:
    """The small part of a shard's round: who sent, and what it cost (integers only)."""

    senders: int = 0
    """Distinct clients whose messages this partial holds (the proxy's threshold counts
    them; a client is in exactly one shard, so shard counts add up)."""
    sent: dict[tuple[Any, int, str], list[np.ndarray]] = field(default_factory=dict)
    """(event, count, unit) -> the ids of the clients that sent it this round."""
    upload_bytes: int = 0
    seconds: float = 0.0
    """Seconds the shard spent on its clients (summed over shards when merged)."""

    def merge(self, other: RoundPartial) -> RoundPartial:
        sent = {k: list(v) for k, v in self.sent.items()}
        for k, v in other.sent.items():
            sent.setdefault(k, []).extend(v)
        return RoundPartial(self.senders + other.senders, sent,
                            self.upload_bytes + other.upload_bytes,
                            self.seconds + other.seconds)



class SystemAdapter(ABC):
    """What a shard folds into its partial, and what the server makes of the total."""

    pieces: Pieces

    @abstractmethod
    def fold_round(self, clients: Clients, spans: list[tuple[int, int, int]], round: int,
                   key: int, broadcast: Any) -> tuple[dict[str, np.ndarray], RoundPartial]:
        """Run the clients of ``spans`` (block, start, stop) in sequence; their sums."""

    @abstractmethod
    def finish(self, server: Server, sums: dict[str, np.ndarray], total: RoundPartial,
               round: int) -> Any:
        """The server's next broadcast from the reduced sums (None: nothing came)."""

    @classmethod
    @abstractmethod
    def for_server(cls, server: Any, n_users: int, proxy: Proxy | None, k: int | None,
                   max_piece_bytes: int) -> SystemAdapter:
        """The adapter of a run of ``server`` (a clear error for a run it cannot shard)."""

    def state(self, clients: Clients) -> Any:
        """The clients' state carried between rounds (None: none)."""
        return None

    def restore(self, clients: Clients, state: Any) -> None:  # noqa: B027 - optional
        """Put back a :meth:`state`."""


def record_sent(partial: RoundPartial, sent: Sent | list[Sent] | None) -> None:
    for one in sent if isinstance(sent, list) else [] if sent is None else [sent]:
        partial.sent.setdefault((one.event, one.count, one.unit), []).append(one.users)


class IntegerSumAdapter(SystemAdapter):
    """Exact integer sums (the secure sum's output): per shard, the int64 sum of its
    clients' vectors, ``clients.step_rows(start, stop, key) -> (vector, Sent or a list of
    them)``, after ``clients.prepare_round(broadcast, round)`` where the clients have one
    (a multi-round protocol's clients read the broadcast); the vectors have the server's
    ``sum_length`` (default ``n_items``) coordinates; the proxy's
    ``forward_sum(total, senders)`` makes the round's one batch (None below its threshold)
    and ``server.aggregate([batch], round)`` the broadcast. Integer addition is exact and
    associative, so the total does not depend on the shards or their order."""

    def __init__(self, n_items: int, proxy: Proxy, max_piece_bytes: int = 256 * 2**20) -> None:
        self.n_items = int(n_items)
        self.proxy = proxy
        self.pieces = Pieces((("sum", (self.n_items,), "int64"),), max_piece_bytes)

    @classmethod
    def for_server(cls, server: Any, n_users: int, proxy: Proxy | None, k: int | None,
                   max_piece_bytes: int) -> IntegerSumAdapter:
        """A run whose proxy forwards one exact sum (``forward_sum``)."""
        if proxy is None or not callable(getattr(proxy, "forward_sum", None)):
            raise DprecError(f"an integer-sum run needs its system's summing proxy, got "
                             f"{type(proxy).__name__}: build the run as the system's fit does")
        return cls(int(getattr(server, "sum_length", server.n_items)), proxy, max_piece_bytes)

    def fold_round(self, clients: Clients, spans: list[tuple[int, int, int]], round: int,
                   key: int, broadcast: Any) -> tuple[dict[str, np.ndarray], RoundPartial]:
        t = time.perf_counter()
        total = np.zeros(self.n_items, np.int64)
        partial = RoundPartial()
        prepare = getattr(clients, "prepare_round", None)
        if prepare is not None:
            prepare(broadcast, round)
        for _block, start, stop in spans:
            vector, sent = clients.step_rows(start, stop, key)  # type: ignore[attr-defined]
            total += vector
            partial.senders += stop - start
            for one in sent if isinstance(sent, list) else [sent]:
                record_sent(partial, one)
        partial.seconds = time.perf_counter() - t
        return {"sum": total}, partial

    def finish(self, server: Server, sums: dict[str, np.ndarray], total: RoundPartial,
               round: int) -> Any:
        batch = self.proxy.forward_sum(sums["sum"], total.senders)  # type: ignore[attr-defined]
        return None if batch is None else server.aggregate([batch], round)
