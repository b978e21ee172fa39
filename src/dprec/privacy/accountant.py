"""Accountants: privacy levels computed from an :class:`~dprec.privacy.events.EventLog`.

After dp-accounting's ``PrivacyAccountant`` (google/differential-privacy): an accountant
says whether it ``supports`` an event and composes a multiset of events into an epsilon at
a target delta; an event it does not know raises :class:`UnsupportedEventError`, never a
silent zero. This module holds the contract and the event bookkeeping they share; the
accountants:

- :class:`~dprec.privacy.pld_accountant.PldAccountant`: privacy loss distributions
  (dp-accounting's ``pld``), the tightest sound analysis here. Each event is represented by
  a dominating pair and the pairs are composed by convolving their PLDs (Zhu, Dong, Wang,
  AISTATS 2022: dominating pairs compose adaptively); losses are rounded up (pessimistic),
  so the result is an upper bound.
- :class:`~dprec.privacy.basic_accountant.BasicAccountant`: basic composition,
  ``sum eps_i``, ``sum delta_i`` (Dwork & Roth 2014, Thm 3.16).
- :class:`~dprec.privacy.rdp_accountant.RdpAccountant`: Renyi DP (dp-accounting's
  ``RdpAccountant``, improved RDP-to-DP conversion, Canonne, Kamath, Steinke 2020) for
  subsampled Gaussian rounds of central / federated DP, including fixed-size batches drawn
  without replacement under replace-one adjacency (Wang, Balle, Kasiviswanathan 2019),
  which the PLD accountant cannot represent.
- :class:`~dprec.privacy.sampled_skellam.SampledSkellamAccountant`: RDP of Poisson-subsampled
  Skellam releases.

:func:`~dprec.privacy.levels.account` turns an event log into privacy levels with them.

Sides. An event is "two"-sided, "one"-sided (presence only: ``BitFlipDpEvent`` with
``p = 1``) or "none" (no finite epsilon). A composition is as weak as its weakest event:
with any one-sided event it is one-sided and composes the presence-side losses (two-sided
events enter with their two-sided pair, which dominates the presence side); with any
"none" event its epsilon is infinite.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar, Literal

import dp_accounting

from dprec.errors import DprecError
from dprec.privacy.adjacency import Adjacency
from dprec.privacy.events import BitFlipDpEvent, LocalReportDpEvent, ShuffledReportDpEvent
from dprec.privacy.guarantee import Sides

__all__ = [
    "LOCAL_REPORTS",
    "SIDE_RANK",
    "Accountant",
    "Composition",
    "Direction",
    "DpEvent",
    "UnsupportedEventError",
    "event_sides",
    "flatten_events",
    "is_non_private",
    "is_noop",
    "weakest_sides",
]

DpEvent = dp_accounting.DpEvent
Direction = Literal["two", "presence"]
SIDE_RANK = {"two": 0, "one": 1, "none": 2}
"""Sides from strongest to weakest: a composition is as weak as its weakest event."""
LOCAL_REPORTS = (BitFlipDpEvent | LocalReportDpEvent | ShuffledReportDpEvent
                 | dp_accounting.RandomizedResponseDpEvent)
"""Local reports: their dominating pairs compare two of one user's inputs (replace-one)."""


class UnsupportedEventError(DprecError):
    """The accountant has no analysis for this event (never treated as zero)."""


@dataclass(frozen=True)
class Composition:
    """``epsilon`` at ``delta`` of a composition, with its sides and how it was obtained."""

    epsilon: float
    delta: float
    sides: Sides = "two"
    notes: tuple[str, ...] = ()


def weakest_sides(sides: Iterable[Sides]) -> Sides:
    """The weakest of ``sides`` (:data:`SIDE_RANK`); "two" for none."""
    out: Sides = "two"
    for s in sides:
        if SIDE_RANK[s] > SIDE_RANK[out]:
            out = s
    return out


def _check_count(count: int) -> int:
    if isinstance(count, bool) or int(count) != count or count < 0:
        raise DprecError(f"count must be an integer >= 0, got {count!r}")
    return int(count)


def is_non_private(event: DpEvent) -> bool:
    """Whether ``event`` has no finite epsilon (non-private, or noise parameter 0)."""
    if isinstance(event, dp_accounting.NonPrivateDpEvent):
        return True
    if isinstance(event, dp_accounting.RandomizedResponseDpEvent):
        return event.num_buckets > 1 and event.noise_parameter == 0
    if isinstance(event, dp_accounting.GaussianDpEvent | dp_accounting.LaplaceDpEvent):
        return event.noise_multiplier == 0
    return False


def is_noop(event: DpEvent) -> bool:
    """Whether ``event`` reveals nothing (a no-op, or randomized response over one bucket or
    with every answer random)."""
    if isinstance(event, dp_accounting.NoOpDpEvent):
        return True
    if isinstance(event, dp_accounting.RandomizedResponseDpEvent):
        return event.num_buckets == 1 or event.noise_parameter == 1
    return False


def event_sides(event: DpEvent) -> Sides:
    """ "two", "one" (presence only: a bit flip with ``p = 1``) or "none" (no finite eps)."""
    if is_non_private(event):
        return "none"
    if isinstance(event, BitFlipDpEvent):
        if event.q == 0.0:
            return "none"
        return "one" if event.p == 1.0 else "two"
    return "two"


def flatten_events(events: Iterable[tuple[DpEvent, int]]) -> dict[DpEvent, int]:
    """Leaf events with total counts (``SelfComposedDpEvent``/``ComposedDpEvent`` expanded)."""
    out: dict[DpEvent, int] = {}

    def add(event: DpEvent, count: int) -> None:
        if not isinstance(event, DpEvent):
            raise DprecError(f"event must be a dp_accounting.DpEvent, got {type(event).__name__}")
        if isinstance(event, dp_accounting.SelfComposedDpEvent):
            add(event.event, count * _check_count(event.count))
        elif isinstance(event, dp_accounting.ComposedDpEvent):
            for e in event.events:
                add(e, count)
        elif count:
            out[event] = out.get(event, 0) + count

    for event, count in events:
        add(event, _check_count(count))
    return out


class Accountant(abc.ABC):
    """Composes events into an epsilon at a delta; unknown events raise.

    ``adjacency``: the neighbouring relation the analysis holds under. The basic accountant
    analyses every event under :attr:`Adjacency.REPLACE_ONE` (a local report's dominating
    pair compares any two inputs; a Gaussian or Laplace event's sensitivity 1 is measured
    under replacement); the PLD accountant takes any relation for noise events (local reports
    under replace-one only), the RDP accountant any relation (sampled events under their own).

    :attr:`Adjacency.ZERO_OUT` (a secure sum with distributed noise): an additive-noise event
    (Gaussian, Laplace, Skellam) gives the same numbers as under add/remove. Both compare
    ``f(D) + Z`` with ``f(D') + Z``, the same noise ``Z`` on both sides (every device sends
    its share either way), where ``f(D) - f(D') = x_u`` (the contribution against the zero
    vector, or against its absence): the event's sensitivities bound ``x_u`` under both, so
    the pair of output distributions, hence every divergence, is the same. A Poisson-sampled
    Gaussian likewise (a sampled zero record adds nothing, as an absent one). Local reports
    are refused under it: their dominating pairs compare two of a user's inputs, and the zero
    record need not be one of the randomiser's inputs; account them under replace-one.
    """

    name: ClassVar[str] = "accountant"
    adjacency: Adjacency = Adjacency.REPLACE_ONE

    @abc.abstractmethod
    def _supports_leaf(self, event: DpEvent) -> bool: ...

    def supports(self, event: DpEvent) -> bool:
        """Whether :meth:`compose` can account for ``event``."""
        if isinstance(event, dp_accounting.SelfComposedDpEvent):
            return self.supports(event.event)
        if isinstance(event, dp_accounting.ComposedDpEvent):
            return all(self.supports(e) for e in event.events)
        return isinstance(event, DpEvent) and self._supports_leaf(event)

    def check(self, event: DpEvent) -> None:
        """Raise :class:`UnsupportedEventError` unless :meth:`supports` ``event``."""
        if not self.supports(event):
            raise UnsupportedEventError(
                f"event must be one the {self.name} accountant supports, got {event!r}"
            )

    def _leaves(self, events: Iterable[tuple[DpEvent, int]]) -> dict[DpEvent, int]:
        leaves = flatten_events(events)
        for event in leaves:
            self.check(event)
        return leaves

    @abc.abstractmethod
    def compose(self, events: Iterable[tuple[DpEvent, int]], delta: float) -> Composition:
        """Epsilon at ``delta`` of the adaptive composition of ``(event, count)`` pairs."""
