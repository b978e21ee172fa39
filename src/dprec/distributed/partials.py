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

Large arrays travel as *pieces* (:class:`~dprec.protocol.sharding.Pieces`): each array cut
along its first axis into chunks of at most ``max_bytes``, every piece reduced on its own,
so no single object or task has to hold more than one piece per input.
"""

from __future__ import annotations

import numpy as np

from dprec.errors import DprecError

__all__ = ["add_pieces", "tree_sum"]


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
