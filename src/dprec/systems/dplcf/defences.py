"""DPLCF's defences (issue 26 §2, §4): the server refuses or screens uploads no honest
client would plausibly send, from public parameters alone
(:mod:`dprec.systems.dplcf.bit_screens`), written as
:class:`~dprec.protocol.aggregation.Aggregator` s (the defence hook) and owned here.

:data:`DPLCF_AGGREGATORS` is the table DPLCF's config and server choose from by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import ClassVar, TypeVar

import numpy as np

from dprec.errors import DprecError
from dprec.protocol.aggregation import Aggregator, MeanAggregator
from dprec.protocol.messages import Message
from dprec.systems.dplcf.bit_screens import (
    BitLaw,
    flagged_uploads,
    ones_range,
    screen_threshold,
)

__all__ = ["DPLCF_AGGREGATORS", "BitRangeAggregator", "BitScreenAggregator",
           "RangeScreenAggregator"]

_Upload = TypeVar("_Upload", bound=Message)


class _BitUploadAggregator(Aggregator):
    """An aggregator that screens DPLCF's bit uploads; FMF-LDP's cells are not for it."""

    rate: float
    law: BitLaw | None
    refused: int

    def cell_totals(self, cells: np.ndarray, values: np.ndarray, n_cells: int) -> np.ndarray:
        raise DprecError(f"the {self.name} aggregator screens DPLCF's bit uploads; for "
                         f"FMF-LDP's cell reports use mean, trimmed or median-of-means")

    def _law(self) -> BitLaw:
        if self.law is None:
            raise DprecError(f"the {self.name} aggregator needs the uploads' public law "
                             f"(DPLCF's SimilarityServer gives it through for_uploads)")
        return self.law


class BitRangeAggregator(_BitUploadAggregator):
    """Refuse DPLCF uploads whose number of ones no honest client would send at the stated
    rate (issue 26 §2; :func:`~dprec.systems.dplcf.bit_screens.ones_range`): an honest upload of
    a history of at most L items is refused with probability <= ``rate`` (default 1e-9).
    Uploads inside the range pass untouched, so a round with no refusal counts exactly the
    uploads of :class:`MeanAggregator` (the same pair counts, bit for bit).

    Privacy: the range depends on public parameters only (N, p, q, L) and the decision on
    the upload alone: post-processing, every guarantee unchanged.
    """

    name: ClassVar[str] = "dplcf-range"
    argument = ("rate", float)
    """``dplcf-range:RATE``; ``dplcf-range`` is rate 1e-9."""

    def __init__(self, rate: float = 1e-9, law: BitLaw | None = None) -> None:
        if isinstance(rate, bool) or not (isinstance(rate, (int, float)) and 0 < rate < 1):
            raise DprecError(f"{self.name}: the false-refusal rate must be in (0, 1), got "
                             f"{rate!r}")
        self.rate = float(rate)
        self.law = law
        self.refused = 0
        """Uploads refused so far."""

    def for_uploads(self, law: BitLaw) -> BitRangeAggregator:
        return type(self)(self.rate, law)

    def uploads(self, batches: Iterable[_Upload]) -> Iterator[_Upload]:
        bounds = ones_range(self._law(), self.rate)
        for m in batches:
            keep = bounds.admits(m.packed)  # type: ignore[attr-defined]
            if keep.all():
                yield m
                continue
            self.refused += int((~keep).sum())
            if keep.any():
                yield replace(m, packed=m.packed[keep])  # type: ignore[attr-defined, type-var]


class BitScreenAggregator(_BitUploadAggregator):
    """Frequent-itemset screening of DPLCF uploads (issue 26 §4; Cao, Jia & Gong, USENIX
    Security 2021, Sec. 6): every upload containing a set of ``z`` items held by more
    uploads than honest flips make plausible at ``rate``
    (:func:`~dprec.systems.dplcf.bit_screens.screen_threshold`) is dropped. With no attacker,
    P(any upload dropped) <= rate; with no upload flagged, the batches pass untouched (the
    mean's counts, bit for bit). Holds the whole round's uploads (n x N bits, unpacked to one
    byte each) before the first is counted.

    Privacy: a function of the uploads the server holds and of public parameters
    (post-processing): every guarantee unchanged.
    """

    name: ClassVar[str] = "dplcf-screen"
    range_first: ClassVar[bool] = False
    argument = ("z", int)
    """``NAME:Z``; ``NAME`` alone is z = 20."""

    def __init__(self, z: int = 20, rate: float = 1e-9, law: BitLaw | None = None,
                 seeds: int = 200) -> None:
        if isinstance(z, bool) or int(z) != z or z < 2:
            raise DprecError(f"{self.name}: the itemset size z must be an integer >= 2, got "
                             f"{z!r}")
        if isinstance(rate, bool) or not (isinstance(rate, (int, float)) and 0 < rate < 1):
            raise DprecError(f"{self.name}: the false-drop rate must be in (0, 1), got "
                             f"{rate!r}")
        self.z = int(z)
        self.rate = float(rate)
        self.law = law
        self.seeds = int(seeds)
        self.refused = 0
        """Uploads refused by the validity range (``dplcf-range+screen``)."""
        self.dropped = 0
        """Uploads dropped by the screen."""
        self.itemsets: list[np.ndarray] = []
        """The flagged z-itemsets of the last round."""

    def for_uploads(self, law: BitLaw) -> BitScreenAggregator:
        return type(self)(self.z, self.rate, law, self.seeds)

    def uploads(self, batches: Iterable[_Upload]) -> Iterator[_Upload]:
        law = self._law()
        held = list(batches)
        if not held:
            return
        packed = np.concatenate([m.packed for m in held])  # type: ignore[attr-defined]
        keep = np.ones(len(packed), bool)
        if self.range_first:
            keep = ones_range(law, self.rate).admits(packed)
            self.refused += int((~keep).sum())
        threshold = screen_threshold(int(keep.sum()), law.n_items, law.p, self.z, self.rate)
        bits = np.unpackbits(packed[keep], axis=1, count=law.n_items).astype(bool)
        flagged, self.itemsets = flagged_uploads(bits, self.z, threshold, self.seeds)
        self.dropped += int(flagged.sum())
        keep[np.flatnonzero(keep)[flagged]] = False
        if keep.all():
            yield from held
            return
        start = 0
        for m in held:
            rows = keep[start:start + len(m.packed)]  # type: ignore[attr-defined]
            start += len(m.packed)  # type: ignore[attr-defined]
            if rows.all():
                yield m
            elif rows.any():
                yield replace(m, packed=m.packed[rows])  # type: ignore[attr-defined, type-var]


class RangeScreenAggregator(BitScreenAggregator):
    """:class:`BitRangeAggregator`'s refusal, then :class:`BitScreenAggregator`'s screen
    on the uploads left (each at ``rate``: an honest upload is lost with probability
    <= 2 rate)."""

    name: ClassVar[str] = "dplcf-range+screen"
    range_first: ClassVar[bool] = True


DPLCF_AGGREGATORS: Mapping[str, type[Aggregator]] = MappingProxyType({
    "mean": MeanAggregator, "dplcf-range": BitRangeAggregator,
    "dplcf-screen": BitScreenAggregator, "dplcf-range+screen": RangeScreenAggregator})
"""DPLCF's aggregators by the name its config and ``--aggregator`` take."""
