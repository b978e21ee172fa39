"""The server's sums as integer partial sums, reduced in a tree.

Every number a shard sends up is an integer (int32 pair counts, int64 report counts and
fixed-point sums), and a reduction only adds integers, so ANY grouping and order of the
reduction (which shard, which tree, which arrival order) gives the same bits. That is what
makes a sharded run identical to a single process: floating point appears only after the
reduction, in the server's estimate, which runs once, in the driver.

Summation is order-invariant, so the simulation needs no shuffle: a shard folds its clients'
reports straight into per-cell sums, and the server sees exactly the multiset of reports a
shuffled batch would carry (the shuffle hides the order, and the sums never had one). The
networked proxy of the services (:mod:`dprec.services.proxy`) still permutes individual
reports, because there the server receives reports, not sums.

Real-valued reports are summed by :class:`~dprec.protocol.aggregation.CellSums`, the
integer sums the in-process ``MeanAggregator`` uses, in the unit it would pick (fixed from
the planned report count, :func:`~dprec.protocol.aggregation.planned_unit`), so a shard's
partial is the in-process sum of its reports and the reduction adds int64 arrays.

Large arrays travel as *pieces* (:class:`Pieces`): each array cut along its first axis into
chunks of at most ``max_bytes``, every piece reduced on its own, so no single object or task
has to hold more than one piece per input.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dprec.errors import DprecError

__all__ = ["Pieces", "RoundPartial", "tree_sum"]


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


def add_pieces(*parts: np.ndarray) -> np.ndarray:
    """The elementwise sum of integer pieces of one shape and dtype (exact)."""
    out = np.array(parts[0], copy=True)
    for p in parts[1:]:
        out += p
    return out


def tree_sum(items: list[np.ndarray], fan_in: int = 2) -> np.ndarray:
    """Sum integer arrays in a tree of ``fan_in`` (the in-process reduction)."""
    if not items:
        raise DprecError("nothing to reduce")
    level = list(items)
    while len(level) > 1:
        level = [add_pieces(*level[i:i + fan_in]) if len(level[i:i + fan_in]) > 1
                 else level[i] for i in range(0, len(level), fan_in)]
    return level[0]
