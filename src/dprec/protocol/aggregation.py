"""How an untrusted server combines one round's reports: the hook for robust aggregation.

Both servers hand what reached them to an :class:`Aggregator`. FMF-LDP's
:class:`~dprec.systems.fmf.server.FactorServer` asks it for the per-cell totals of the
(item, factor) reports (:meth:`Aggregator.cell_totals`), DPLCF's
:class:`~dprec.systems.dplcf.server.SimilarityServer` for the uploads that count
(:meth:`Aggregator.uploads`). The first aggregator is the plain mean
(:class:`MeanAggregator`); robust ones (trimmed or median-of-means totals, screening of
uploads) plug in here, and the services choose one by name (:data:`AGGREGATORS`).

Order invariance. A shuffling proxy forwards reports in an order drawn from its own
generator: seeded in the simulation, a CSPRNG in a deployment. The same client randomness
therefore hands the server the same multiset of reports in different orders, split into
different batches. Floating-point sums depend on order, so :class:`MeanAggregator` adds each
cell's reports in a canonical order (by cell, then value): its totals are a function of the
multiset alone, and the in-process and HTTP runs of a protocol give the same bits.
DPLCF's pair counts are sums of 0/1 products, exact in any order and any batching.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from typing import ClassVar

import numpy as np

from dprec.errors import DprecError
from dprec.protocol.messages import ObfuscatedBits

__all__ = ["AGGREGATORS", "Aggregator", "MeanAggregator", "make_aggregator"]


class Aggregator(ABC):
    """What the server makes of one round's reports (plain mean, or a robust variant)."""

    name: ClassVar[str]

    @abstractmethod
    def cell_totals(self, cells: np.ndarray, values: np.ndarray, n_cells: int) -> np.ndarray:
        """Per-cell total of the report values, float64 ``(n_cells,)``.

        ``cells[r]`` (int64 in ``[0, n_cells)``) and ``values[r]`` (float64) are report r;
        the server divides by the number of reports. Must not depend on the reports' order.
        """

    def uploads(self, batches: Iterable[ObfuscatedBits]) -> Iterator[ObfuscatedBits]:
        """The uploaded vectors that count (all of them for the plain mean)."""
        yield from batches


class MeanAggregator(Aggregator):
    """The plain mean: every report counts once; each cell is summed in sorted order."""

    name: ClassVar[str] = "mean"

    def cell_totals(self, cells: np.ndarray, values: np.ndarray, n_cells: int) -> np.ndarray:
        order = np.lexsort((values, cells))  # canonical: by cell, then value
        return np.bincount(cells[order], weights=values[order], minlength=n_cells)


AGGREGATORS: dict[str, type[Aggregator]] = {"mean": MeanAggregator}
"""Aggregators by the name the services' ``--aggregator`` option takes."""


def make_aggregator(name: str) -> Aggregator:
    """The aggregator called ``name``; a clear error lists the known names."""
    try:
        return AGGREGATORS[name]()
    except KeyError:
        raise DprecError(f"aggregator must be one of {sorted(AGGREGATORS)}, got {name!r}") from None
