"""Basic composition (Dwork & Roth 2014, Thm 3.16): ``sum eps_i``, ``sum delta_i`` of each
event's pure ``(eps, delta)``."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import ClassVar

import dp_accounting

from dprec.privacy.accountant import (
    LOCAL_REPORTS,
    Accountant,
    Composition,
    Direction,
    DpEvent,
    UnsupportedEventError,
    event_sides,
    is_non_private,
    is_noop,
    weakest_sides,
)
from dprec.privacy.events import BitFlipDpEvent, LocalReportDpEvent, ShuffledReportDpEvent

__all__ = ["BasicAccountant"]


class BasicAccountant(Accountant):
    """Basic composition: ``(sum count_i eps_i, sum count_i delta_i)`` (Dwork & Roth,
    Thm 3.16), from each event's pure ``(eps, delta)`` (:meth:`epsilon_delta`)."""

    name: ClassVar[str] = "basic"

    def _supports_leaf(self, event: DpEvent) -> bool:
        return isinstance(event, LOCAL_REPORTS | dp_accounting.LaplaceDpEvent
                          | dp_accounting.NoOpDpEvent | dp_accounting.NonPrivateDpEvent) or (
            isinstance(event, dp_accounting.GaussianDpEvent) and is_non_private(event))

    def epsilon_delta(self, event: DpEvent, direction: Direction = "two") -> tuple[float, float]:
        """One event's ``(eps, delta)``; ``direction="presence"`` uses a bit flip's
        ``ln(p/q)`` only. Shuffled reports count at their local ``eps0`` (post-processing;
        basic composition ignores amplification)."""
        self.check(event)
        if is_non_private(event):
            return math.inf, 0.0
        if is_noop(event):
            return 0.0, 0.0
        if isinstance(event, BitFlipDpEvent):
            pres = math.inf if event.q == 0.0 else math.log(event.p) - math.log(event.q)
            if direction == "presence":
                return pres, 0.0
            absn = math.inf if event.p == 1.0 else math.log1p(-event.q) - math.log1p(-event.p)
            return max(pres, absn), 0.0
        if isinstance(event, LocalReportDpEvent):
            return float(event.epsilon), 0.0
        if isinstance(event, ShuffledReportDpEvent):
            return float(event.epsilon0), 0.0
        if isinstance(event, dp_accounting.RandomizedResponseDpEvent):
            other = event.noise_parameter / event.num_buckets
            return math.log1p((1.0 - event.noise_parameter) / other), 0.0
        if isinstance(event, dp_accounting.LaplaceDpEvent):
            return 1.0 / event.noise_multiplier, 0.0
        raise UnsupportedEventError(f"no pure epsilon for {event!r}")  # pragma: no cover

    def total_epsilon_delta(
        self, event: DpEvent, direction: Direction | None = None
    ) -> tuple[float, float]:
        """:meth:`epsilon_delta` summed over a composite event's parts; ``direction`` None
        means "presence" for a one-sided event and "two" otherwise (inf if non-private)."""
        leaves = self._leaves([(event, 1)])
        if direction is None:
            sides = weakest_sides(event_sides(e) for e in leaves)
            direction = "presence" if sides == "one" else "two"
        eps = dlt = 0.0
        for leaf, count in leaves.items():
            e, d = self.epsilon_delta(leaf, direction)
            eps += count * e
            dlt += count * d
        return eps, dlt

    def compose(self, events: Iterable[tuple[DpEvent, int]], delta: float = 0.0) -> Composition:
        """``delta`` is ignored: basic composition yields its own ``sum delta_i``."""
        leaves = self._leaves(events)
        sides = weakest_sides(event_sides(e) for e in leaves)
        if sides == "none":
            return Composition(math.inf, 0.0, "none", ("a non-private event: eps = inf",))
        direction: Direction = "presence" if sides == "one" else "two"
        eps = dlt = 0.0
        for event, count in leaves.items():
            e, d = self.epsilon_delta(event, direction)
            eps += count * e
            dlt += count * d
        return Composition(eps, min(1.0, dlt), sides, ("basic composition: sum of epsilons",))
