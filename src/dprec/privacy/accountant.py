"""Accountants: privacy levels computed from an :class:`~dprec.privacy.events.EventLog`.

After dp-accounting's ``PrivacyAccountant`` (google/differential-privacy): an accountant
says whether it ``supports`` an event and composes a multiset of events into an epsilon at
a target delta; an event it does not know raises :class:`UnsupportedEventError`, never a
silent zero. Two accountants:

- :class:`PldAccountant`: privacy loss distributions (dp-accounting's ``pld``), the
  tightest sound analysis here. Each event is represented by a dominating pair (below) and
  the pairs are composed by convolving their PLDs (Zhu, Dong, Wang, AISTATS 2022: dominating
  pairs compose adaptively); losses are rounded up (pessimistic), so the result is an upper
  bound.
- :class:`BasicAccountant`: basic composition, ``sum eps_i``, ``sum delta_i`` (Dwork & Roth
  2014, Thm 3.16).
- :class:`RdpAccountant`: Renyi DP (dp-accounting's ``RdpAccountant``, improved RDP-to-DP
  conversion, Canonne, Kamath, Steinke 2020) for subsampled Gaussian rounds of central /
  federated DP, including fixed-size batches drawn without replacement under replace-one
  adjacency (Wang, Balle, Kasiviswanathan 2019), which the PLD accountant cannot represent.

Dominating pairs per event:

- :class:`~dprec.privacy.events.BitFlipDpEvent` ``(p, q)``, two-sided: a user's bits may go
  1 -> 0 or 0 -> 1, so a pair must dominate both ``(Ber p, Ber q)`` and ``(Ber q, Ber p)``.
  The symmetrised trade-off function ``min(f, f^-1)**`` (Dong, Roth, Su 2022, Prop. 2.4) is
  the three-point pair ``P* = (u, v, w)``, ``Q* = (w, v, u)`` with ``u = min(q, 1 - p)``,
  ``w = 1 - max(q, 1 - p)``, ``v = 1 - u - w``: losses ``-+ln(w/u)`` and 0. It is exact for
  symmetric flipping (binary randomized response) and its largest loss is
  ``max(ln(p/q), ln((1-q)/(1-p)))``.
- ``BitFlipDpEvent`` one-sided (``p = 1``): only the presence direction, ``(Ber p, Ber q)``
  (bit 1 vs bit 0), loss ``ln(p/q)``.
- A composition of nothing but ``count`` two-sided flips of one ``(p, q)`` (DPLCF's upload:
  the bits of one vector, flipped at once): the symmetrised pair dominates every bit in both
  directions at once and so overstates the vector's loss when ``p != 1 - q``; the exact worst
  case over pairs of vectors (:func:`~dprec.privacy.bit_vector.bit_vector_epsilon`) is used
  where it is smaller.
- :class:`~dprec.privacy.events.LocalReportDpEvent` ``eps``: binary randomized response
  with ``eps``, which dominates every pure ``eps``-DP mechanism (Kairouz, Oh, Viswanath 2015),
  so composing it is the optimal composition of pure DP.
- :class:`~dprec.privacy.events.ShuffledReportDpEvent`: FMT21's clone pair
  (:func:`dprec.privacy.shuffle.clone_pair_pld`).
- :class:`~dprec.privacy.skellam.SkellamDpEvent` with ``unit_shifts = k`` (neighbouring
  integer vectors differ by +-1 in at most k coordinates: a k-hot contribution): the k-fold
  product of the 1-D pair ``(Sk(mu) + 1, Sk(mu))``, which dominates both directions
  (:mod:`dprec.privacy.skellam`); without ``unit_shifts``, the RDP bound.
- dp-accounting's ``RandomizedResponseDpEvent`` (replace-one), ``GaussianDpEvent`` and
  ``LaplaceDpEvent`` (sensitivity 1, dp-accounting's own PLD constructors), ``NoOpDpEvent``,
  ``NonPrivateDpEvent`` (infinite epsilon), and ``SelfComposedDpEvent`` /
  ``ComposedDpEvent`` of these.

Sides. An event is "two"-sided, "one"-sided (presence only: ``BitFlipDpEvent`` with
``p = 1``) or "none" (no finite epsilon). A composition is as weak as its weakest event:
with any one-sided event it is one-sided and composes the presence-side losses (two-sided
events enter with their two-sided pair, which dominates the presence side); with any
"none" event its epsilon is infinite.

:func:`account` reads an event log and returns :class:`PrivacyLevels`: the worst-case user
(users grouped by their vector of event counts; only count vectors not dominated by another
are composed, since composing more events never lowers epsilon) at user level (all events)
and at event level (one interaction: all ``unit="user"`` copies plus one copy per
``unit="interaction"`` record), with the PLD analysis and, beside it, basic composition.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar, Literal

import dp_accounting
import numpy as np
from dp_accounting.pld import privacy_loss_distribution as pld
from scipy.special import expit

from dprec.errors import DprecError, check_positive
from dprec.privacy.adjacency import Adjacency, as_adjacency
from dprec.privacy.bit_vector import MAX_EXACT_BITS, bit_vector_epsilon
from dprec.privacy.events import (
    BitFlipDpEvent,
    EventLog,
    LocalReportDpEvent,
    ShuffledReportDpEvent,
    describe_event,
)
from dprec.privacy.guarantee import Guarantee, Model, Sides
from dprec.privacy.shuffle import clone_pair_pld
from dprec.privacy.skellam import SKELLAM_ORDERS, SkellamDpEvent, skellam_pld, skellam_rdp

__all__ = [
    "Accountant",
    "Adjacency",
    "BasicAccountant",
    "Composition",
    "Direction",
    "PldAccountant",
    "PrivacyLevels",
    "RdpAccountant",
    "UnsupportedEventError",
    "account",
    "event_sides",
]

DpEvent = dp_accounting.DpEvent
Direction = Literal["two", "presence"]
_SIDE_RANK = {"two": 0, "one": 1, "none": 2}
# A loss within 1e-6 of a grid point (in grid units) is snapped to it before rounding up, so
# that e.g. eps = 1 lies on the 1e-4 grid despite floating point (costs <= 1e-6 x interval).
_SNAP = 1e-6
_MAX_DENSE_BINS = 50_000_000


class UnsupportedEventError(DprecError):
    """The accountant has no analysis for this event (never treated as zero)."""


@dataclass(frozen=True)
class Composition:
    """``epsilon`` at ``delta`` of a composition, with its sides and how it was obtained."""

    epsilon: float
    delta: float
    sides: Sides = "two"
    notes: tuple[str, ...] = ()


_MAX_LAPLACE_PLD_EPS = 20.0
"""Above this per-event eps a Laplace event is composed as pure eps-DP: dp_accounting's
Laplace PLD spans 2 eps / interval bins, and the gain over pure composition is negligible."""


def _one_bit_vector(leaves: dict[DpEvent, int]) -> tuple[tuple[float, float], int] | None:
    """((p, q), count) when the composition is ``count`` two-sided flips of one (p, q) (plus
    no-ops): the bits of one vector, flipped at once (:mod:`dprec.privacy.bit_vector`)."""
    flips = [(e, c) for e, c in leaves.items() if not _is_noop(e)]
    if len(flips) != 1 or not isinstance(flips[0][0], BitFlipDpEvent):
        return None
    event, count = flips[0]
    if not 0.0 < event.q < event.p < 1.0 or not 1 <= count <= MAX_EXACT_BITS:
        return None
    return (float(event.p), float(event.q)), int(count)


def _weakest(sides: Iterable[Sides]) -> Sides:
    out: Sides = "two"
    for s in sides:
        if _SIDE_RANK[s] > _SIDE_RANK[out]:
            out = s
    return out


def _check_count(count: int) -> int:
    if isinstance(count, bool) or int(count) != count or count < 0:
        raise DprecError(f"count must be an integer >= 0, got {count!r}")
    return int(count)


def _is_non_private(event: DpEvent) -> bool:
    if isinstance(event, dp_accounting.NonPrivateDpEvent):
        return True
    if isinstance(event, dp_accounting.RandomizedResponseDpEvent):
        return event.num_buckets > 1 and event.noise_parameter == 0
    if isinstance(event, dp_accounting.GaussianDpEvent | dp_accounting.LaplaceDpEvent):
        return event.noise_multiplier == 0
    return False


def _is_noop(event: DpEvent) -> bool:
    if isinstance(event, dp_accounting.NoOpDpEvent):
        return True
    if isinstance(event, dp_accounting.RandomizedResponseDpEvent):
        return event.num_buckets == 1 or event.noise_parameter == 1
    return False


def event_sides(event: DpEvent) -> Sides:
    """ "two", "one" (presence only: a bit flip with ``p = 1``) or "none" (no finite eps)."""
    if _is_non_private(event):
        return "none"
    if isinstance(event, BitFlipDpEvent):
        if event.q == 0.0:
            return "none"
        return "one" if event.p == 1.0 else "two"
    return "two"


def _flatten(events: Iterable[tuple[DpEvent, int]]) -> dict[DpEvent, int]:
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
        leaves = _flatten(events)
        for event in leaves:
            self.check(event)
        return leaves

    @abc.abstractmethod
    def compose(self, events: Iterable[tuple[DpEvent, int]], delta: float) -> Composition:
        """Epsilon at ``delta`` of the adaptive composition of ``(event, count)`` pairs."""


class BasicAccountant(Accountant):
    """Basic composition: ``(sum count_i eps_i, sum count_i delta_i)`` (Dwork & Roth,
    Thm 3.16), from each event's pure ``(eps, delta)`` (:meth:`epsilon_delta`)."""

    name: ClassVar[str] = "basic"

    def _supports_leaf(self, event: DpEvent) -> bool:
        return isinstance(
            event,
            BitFlipDpEvent
            | LocalReportDpEvent
            | ShuffledReportDpEvent
            | dp_accounting.RandomizedResponseDpEvent
            | dp_accounting.LaplaceDpEvent
            | dp_accounting.NoOpDpEvent
            | dp_accounting.NonPrivateDpEvent,
        ) or (isinstance(event, dp_accounting.GaussianDpEvent) and _is_non_private(event))

    def epsilon_delta(self, event: DpEvent, direction: Direction = "two") -> tuple[float, float]:
        """One event's ``(eps, delta)``; ``direction="presence"`` uses a bit flip's
        ``ln(p/q)`` only. Shuffled reports count at their local ``eps0`` (post-processing;
        basic composition ignores amplification)."""
        self.check(event)
        if _is_non_private(event):
            return math.inf, 0.0
        if _is_noop(event):
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
            sides = _weakest(event_sides(e) for e in leaves)
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
        sides = _weakest(event_sides(e) for e in leaves)
        if sides == "none":
            return Composition(math.inf, 0.0, "none", ("a non-private event: eps = inf",))
        direction: Direction = "presence" if sides == "one" else "two"
        eps = dlt = 0.0
        for event, count in leaves.items():
            e, d = self.epsilon_delta(event, direction)
            eps += count * e
            dlt += count * d
        return Composition(eps, min(1.0, dlt), sides, ("basic composition: sum of epsilons",))


@dataclass(frozen=True)
class _Atoms:
    """A PLD with finitely many losses: ``probs`` at ``index * interval`` plus ``inf_mass``."""

    index: np.ndarray
    probs: np.ndarray
    inf_mass: float


class PldAccountant(Accountant):
    """Privacy-loss-distribution composition (dp-accounting) of dominating pairs.

    ``value_discretization_interval``: losses are rounded up to this grid (each of ``k``
    composed events adds at most one interval to epsilon). Events with finitely many losses
    on a coarser common lattice (bit flips, pure reports) are composed on that lattice,
    exactly as on the fine grid but without the empty bins, so ``1682`` bit flips cost
    milliseconds.

    ``adjacency``: :attr:`Adjacency.REPLACE_ONE` (default), :attr:`Adjacency.ADD_REMOVE_ONE`
    (a user present vs absent) or :attr:`Adjacency.ZERO_OUT` (a user's contribution vs the
    zero vector, the noise unchanged); a string is refused. Local reports (bit flips,
    randomized response, shuffled reports) compare one user's two inputs and are only
    accounted under replace-one; noise events (Skellam, Gaussian, Laplace) take their
    sensitivities under this relation (the same numbers under zero-out as under add/remove:
    :class:`Accountant`).

    :class:`~dprec.privacy.skellam.SkellamDpEvent`: with ``unit_shifts`` (a k-hot
    contribution), its exact PLD (:func:`~dprec.privacy.skellam.skellam_pld`: the k-fold
    composition of the 1-D unit shift, both directions); the RDP bound (AKL21 Thm 3.5) of
    :class:`RdpAccountant` is reported instead where it is smaller (both are sound). A
    composition holding a Skellam event without ``unit_shifts`` is composed by
    :class:`RdpAccountant` (its events permitting), the notes saying so.
    """

    name: ClassVar[str] = "pld"

    def __init__(self, value_discretization_interval: float = 1e-4,
                 adjacency: Adjacency = Adjacency.REPLACE_ONE) -> None:
        check_positive("value_discretization_interval", value_discretization_interval)
        self.value_discretization_interval = float(value_discretization_interval)
        self.adjacency = as_adjacency(adjacency)

    def _supports_leaf(self, event: DpEvent) -> bool:
        if isinstance(event, SkellamDpEvent | dp_accounting.GaussianDpEvent
                      | dp_accounting.LaplaceDpEvent | dp_accounting.NoOpDpEvent
                      | dp_accounting.NonPrivateDpEvent):
            return True
        if self.adjacency is not Adjacency.REPLACE_ONE:
            return False
        return isinstance(
            event,
            BitFlipDpEvent
            | LocalReportDpEvent
            | ShuffledReportDpEvent
            | dp_accounting.RandomizedResponseDpEvent
            | dp_accounting.GaussianDpEvent
            | dp_accounting.LaplaceDpEvent
            | dp_accounting.NoOpDpEvent
            | dp_accounting.NonPrivateDpEvent,
        )

    # -- per-event dominating pairs ---------------------------------------------------------

    def _atoms(self, losses: Sequence[float], probs: Sequence[float], inf: float) -> _Atoms:
        iv = self.value_discretization_interval
        loss = np.asarray(losses, dtype=float)
        prob = np.asarray(probs, dtype=float)
        keep = prob > 0
        index = np.ceil(loss[keep] / iv - _SNAP).astype(np.int64)
        uniq, inv = np.unique(index, return_inverse=True)
        return _Atoms(uniq, np.bincount(inv, weights=prob[keep]), float(inf))

    def _event_atoms(self, event: DpEvent, direction: Direction) -> _Atoms | None:
        """Finite-support pairs as atoms; None for events built by a PLD constructor."""
        if _is_noop(event):
            return self._atoms([0.0], [1.0], 0.0)
        if isinstance(event, BitFlipDpEvent):
            p, q = event.p, event.q
            if direction == "presence":  # upper Ber(p) (bit 1), lower Ber(q) (bit 0)
                return self._atoms(
                    [math.log(p / q), math.log1p(-p) - math.log1p(-q) if p < 1 else 0.0],
                    [p, 1.0 - p],
                    0.0,
                )
            u, w = min(q, 1.0 - p), 1.0 - max(q, 1.0 - p)  # symmetrised pair (u, v, w)
            ratio = math.log(w / u)
            return self._atoms([-ratio, 0.0, ratio], [u, 1.0 - u - w, w], 0.0)
        if isinstance(event, LocalReportDpEvent):
            eps = float(event.epsilon)
            return self._atoms([eps, -eps], [float(expit(eps)), float(expit(-eps))], 0.0)
        if isinstance(event, dp_accounting.RandomizedResponseDpEvent):
            other = event.noise_parameter / event.num_buckets
            keep = 1.0 - event.noise_parameter + other
            ratio = math.log1p((1.0 - event.noise_parameter) / other)
            rest = max(0.0, 1.0 - keep - other)
            return self._atoms([ratio, -ratio, 0.0], [keep, other, rest], 0.0)
        return None

    def _dense_pld(self, event: DpEvent) -> tuple[pld.PrivacyLossDistribution, tuple[str, ...]]:
        iv = self.value_discretization_interval
        if isinstance(event, ShuffledReportDpEvent):
            try:
                return clone_pair_pld(float(event.epsilon0), int(event.n), iv), ()
            except DprecError as e:
                note = f"{describe_event(event)}: clone analysis unavailable ({e}); local eps0 used"
                atoms = self._event_atoms(LocalReportDpEvent(event.epsilon0), "two")
                assert atoms is not None
                return self._atoms_pld(atoms, 1), (note,)
        if isinstance(event, SkellamDpEvent):
            return skellam_pld(event, 1, iv), (
                f"{describe_event(event)}: exact PLD of {event.unit_shifts} unit shifts of "
                "Sk(mu) (k-fold 1-D PLD; both directions equal by the symmetry of Skellam; "
                "tail mass <= 1e-18 per coordinate counted as infinite loss)",)
        if isinstance(event, dp_accounting.GaussianDpEvent):
            return pld.from_gaussian_mechanism(
                event.noise_multiplier, value_discretization_interval=iv
            ), ()
        if isinstance(event, dp_accounting.LaplaceDpEvent):
            eps = 1.0 / float(event.noise_multiplier)
            if eps > _MAX_LAPLACE_PLD_EPS:
                atoms = self._event_atoms(LocalReportDpEvent(eps), "two")
                assert atoms is not None
                note = (f"{describe_event(event)}: eps={eps:.4g} per event; composed as a pure "
                        "eps-DP event (sound; the Laplace PLD would need too many bins)")
                return self._atoms_pld(atoms, 1), (note,)
            return pld.from_laplace_mechanism(
                event.noise_multiplier, value_discretization_interval=iv
            ), ()
        raise UnsupportedEventError(f"no PLD for {event!r}")  # pragma: no cover

    def _atoms_pld(self, atoms: _Atoms, lattice: int) -> pld.PrivacyLossDistribution:
        index = atoms.index // lattice
        span = int(index.max() - index.min()) + 1 if index.size else 1
        if span > _MAX_DENSE_BINS:
            raise DprecError(
                f"loss range of {span} bins is too wide to compose; use a coarser "
                f"value_discretization_interval (got {self.value_discretization_interval})"
            )
        return pld.PrivacyLossDistribution.create_from_rounded_probability(
            dict(zip(index.tolist(), atoms.probs.tolist(), strict=True)),
            atoms.inf_mass,
            lattice * self.value_discretization_interval,
        )

    def compose(self, events: Iterable[tuple[DpEvent, int]], delta: float) -> Composition:
        """Epsilon at ``delta`` of the PLD composition (an upper bound: pessimistic rounding)."""
        if not 0 < delta < 1:
            raise DprecError(f"delta must be in (0, 1), got {delta}")
        leaves = self._leaves(events)
        if not leaves:
            return Composition(0.0, 0.0, "two", ("no events: eps = 0",))
        sides = _weakest(event_sides(e) for e in leaves)
        if sides == "none":
            bad = [describe_event(e) for e in leaves if event_sides(e) == "none"]
            return Composition(math.inf, delta, "none", (f"no finite eps: {', '.join(bad)}",))
        direction: Direction = "presence" if sides == "one" else "two"
        if any(isinstance(e, SkellamDpEvent) for e in leaves):
            return self._compose_skellam(leaves, delta, sides, direction)
        pld_result = self._compose_pld(leaves, delta, sides, direction)
        vector = _one_bit_vector(leaves) if direction == "two" else None
        if vector is None:
            return pld_result
        (p, q), bits = vector
        exact = bit_vector_epsilon(p, q, bits, delta)
        if not exact < pld_result.epsilon:
            return pld_result
        return Composition(exact, delta, sides, (
            f"exact worst case over pairs of {bits}-bit vectors flipped at once (p={p:.6g}, "
            f"q={q:.6g}): max over the split of the differing bits into presence (1 vs 0) "
            "and absence (0 vs 1) flips of the exact hockey-stick divergence "
            "(dprec.privacy.bit_vector; binomial tails counted in full)",
            f"the per-bit symmetrised PLD gives eps={pld_result.epsilon:.6g}",
        ))

    def _compose_skellam(self, leaves: dict[DpEvent, int], delta: float, sides: Sides,
                         direction: Direction) -> Composition:
        """The tightest sound analysis of a composition holding Skellam events: the PLD when
        every one has ``unit_shifts``, the RDP bound where that is smaller or the only one."""
        rdp_acc = RdpAccountant(self.adjacency)
        rdp = (rdp_acc.compose(leaves.items(), delta)
               if all(rdp_acc.supports(e) for e in leaves) else None)
        loose = [describe_event(e) for e in leaves
                 if isinstance(e, SkellamDpEvent) and e.unit_shifts is None]
        if loose:
            if rdp is None:
                raise UnsupportedEventError(
                    f"Skellam events without unit_shifts ({', '.join(loose)}) have only the "
                    "RDP bound, and the RDP accountant cannot compose the other events here; "
                    "give unit_shifts (SkellamDpEvent.k_hot) or account them separately")
            return replace(rdp, notes=(
                "analysis: RDP (a Skellam event without unit_shifts has no exact PLD here)",
                *rdp.notes))
        tight = self._compose_pld(leaves, delta, sides, direction)
        if rdp is not None and rdp.epsilon < tight.epsilon:
            return replace(rdp, notes=(
                f"analysis: RDP, smaller than the PLD's eps={tight.epsilon:.6g}", *rdp.notes))
        beside = () if rdp is None else (f"the RDP bound gives eps={rdp.epsilon:.6g}",)
        return replace(tight, notes=(
            f"analysis: PLD of the Skellam mechanism ({self.adjacency.describe()})",
            *tight.notes, *beside))

    def _compose_pld(self, leaves: dict[DpEvent, int], delta: float, sides: Sides,
                     direction: Direction) -> Composition:
        atoms = {e: self._event_atoms(e, direction) for e in leaves}
        lattice = 0
        for a in atoms.values():
            lattice = 1 if a is None else math.gcd(lattice, *a.index.tolist())
        lattice = max(lattice, 1)
        notes: list[str] = []
        total: pld.PrivacyLossDistribution | None = None
        for event, count in leaves.items():
            a = atoms[event]
            if a is None:
                one, extra = self._dense_pld(event)
                notes.extend(extra)
            else:
                one = self._atoms_pld(a, lattice)
            many = one.self_compose(count) if count > 1 else one
            total = many if total is None else total.compose(many)
        assert total is not None
        eps = max(0.0, float(total.get_epsilon_for_delta(delta)))
        notes.append(
            f"PLD composition (dp-accounting, pessimistic, interval "
            f"{self.value_discretization_interval:g}"
            + (f", on the lattice {lattice} x interval" if lattice > 1 else "")
            + ")"
            + ("; presence-side losses (one-sided)" if sides == "one" else "")
        )
        return Composition(eps, delta, sides, tuple(notes))


class RdpAccountant(Accountant):
    """Renyi-DP composition of (subsampled) Gaussian events (dp-accounting's RDP accountant).

    ``adjacency``: :attr:`Adjacency.REPLACE_ONE` (fixed-size batches without replacement,
    ``SampledWithoutReplacementDpEvent``; sensitivity measured under replacement),
    :attr:`Adjacency.ADD_REMOVE_ONE` (Poisson sampling, ``PoissonSampledDpEvent``) or
    :attr:`Adjacency.ZERO_OUT` (Poisson sampling too: dp-accounting's ``REPLACE_SPECIAL``,
    the same curve as add/remove); a string is refused. An event that needs another relation
    raises :class:`UnsupportedEventError`. Epsilon uses the improved conversion (dp-accounting's
    default); all supported events are two-sided.

    :class:`~dprec.privacy.skellam.SkellamDpEvent` (the Skellam mechanism, AKL21 Thm 3.5,
    sensitivities under this accountant's relation) is composed on the integer orders
    :data:`~dprec.privacy.skellam.SKELLAM_ORDERS`, where its bound holds; a composition
    without one keeps dp-accounting's default orders.
    """

    name: ClassVar[str] = "rdp"

    def __init__(self, adjacency: Adjacency = Adjacency.REPLACE_ONE) -> None:
        self.adjacency = as_adjacency(adjacency)

    def _supports_leaf(self, event: DpEvent) -> bool:
        if isinstance(event, dp_accounting.GaussianDpEvent | dp_accounting.NoOpDpEvent
                      | SkellamDpEvent):
            return True
        if isinstance(event, dp_accounting.SampledWithoutReplacementDpEvent):
            return (self.adjacency is Adjacency.REPLACE_ONE
                    and isinstance(event.event, dp_accounting.GaussianDpEvent))
        if isinstance(event, dp_accounting.PoissonSampledDpEvent):
            return (self.adjacency in (Adjacency.ADD_REMOVE_ONE, Adjacency.ZERO_OUT)
                    and isinstance(event.event, dp_accounting.GaussianDpEvent))
        return False

    def compose(self, events: Iterable[tuple[DpEvent, int]], delta: float) -> Composition:
        """Epsilon at ``delta`` of the RDP composition (improved conversion)."""
        from dp_accounting.rdp import rdp_privacy_accountant

        if not 0 < delta < 1:
            raise DprecError(f"delta must be in (0, 1), got {delta}")
        leaves = {e: c for e, c in self._leaves(events).items() if c > 0}
        if not leaves:
            return Composition(0.0, 0.0, "two", ("no events: eps = 0",))
        skellam = {e: c for e, c in leaves.items() if isinstance(e, SkellamDpEvent)}
        orders = SKELLAM_ORDERS if skellam else None
        acc = rdp_privacy_accountant.RdpAccountant(
            orders=orders, neighboring_relation=self.adjacency.to_dp_accounting())
        for event, count in leaves.items():
            if event not in skellam:
                acc.compose(event, int(count))
        notes = [f"RDP composition (dp-accounting, {self.adjacency.value} adjacency, improved "
                 "RDP-to-DP conversion)"]
        if not skellam:
            return Composition(float(acc.get_epsilon(delta)), delta, "two", tuple(notes))
        # dp-accounting has no Skellam event: its curve is added to the accountant's own
        # (composition of RDP curves is their sum), then converted the same way
        rdp = np.asarray(acc._rdp, dtype=np.float64).copy()
        for event, count in skellam.items():
            rdp += int(count) * skellam_rdp(event, orders)
        eps, _ = rdp_privacy_accountant.compute_epsilon(np.asarray(orders, float), rdp, delta)
        notes.append("Skellam RDP bound of Agarwal, Kairouz, Liu (NeurIPS 2021, Thm 3.5) on "
                     "integer orders 2..4096")
        return Composition(float(eps), delta, "two", tuple(notes))


# -- privacy levels of a log -----------------------------------------------------------------


@dataclass(frozen=True)
class PrivacyLevels:
    """Guarantees of one run: per interaction, per user (tightest), per user (basic)."""

    event: Guarantee
    user: Guarantee
    user_basic: Guarantee | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "event": self.event.to_json(),
            "user": self.user.to_json(),
            "user_basic": None if self.user_basic is None else self.user_basic.to_json(),
        }


def _unique_rows(matrix: np.ndarray) -> np.ndarray:
    """Distinct rows (lexicographic sort per column; faster than ``np.unique(axis=0)``)."""
    order = np.lexsort(matrix.T[::-1])
    rows = matrix[order]
    first = np.ones(rows.shape[0], dtype=bool)
    first[1:] = (rows[1:] != rows[:-1]).any(axis=1)
    return rows[first]


def _maximal_rows(rows: np.ndarray, limit: int) -> np.ndarray | None:
    """Rows not dominated (<= everywhere) by another row; None if more than ``limit``.

    Repeatedly takes the remaining row with the largest sum (never dominated by a remaining
    row) and drops every row it dominates; vectorised over rows.
    """
    out = []
    rest = rows
    while rest.shape[0]:
        if len(out) == limit:
            return None
        top = rest[int(np.argmax(rest.sum(axis=1)))]
        out.append(top)
        rest = rest[~(rest <= top).all(axis=1)]
    return np.array(out)


def _describe_row(events: Sequence[DpEvent], row: np.ndarray) -> str:
    merged = _flatten((e, int(c)) for e, c in zip(events, row, strict=True))
    return " + ".join(f"{c} x {describe_event(e)}" for e, c in merged.items())


def _no_events(level: Literal["event", "user"], model: Model) -> Guarantee:
    return Guarantee(0.0, 0.0, level, "two", model, "no events", ("no user underwent an event",))


def _pld_level(
    acc: Accountant,
    events: Sequence[DpEvent],
    matrix: np.ndarray,
    delta: float,
    level: Literal["event", "user"],
    model: Model,
    max_groups: int,
) -> Guarantee:
    active = matrix[matrix.any(axis=1)] if matrix.size else matrix[:0]
    if not active.shape[0]:
        return _no_events(level, model)
    rows = _unique_rows(active)
    maxima = _maximal_rows(rows, max_groups)
    notes = []
    if maxima is None:
        maxima = rows.max(axis=0, keepdims=True)
        notes.append(
            f"more than {max_groups} undominated count vectors among {rows.shape[0]}: "
            "composed their elementwise maximum (an upper bound for every user)"
        )
    comps = [acc.compose(zip(events, row.tolist(), strict=True), delta) for row in maxima]
    worst = max(range(len(comps)), key=lambda i: comps[i].epsilon)
    sides = _weakest(c.sides for c in comps)
    notes.insert(
        0,
        f"worst case over {rows.shape[0]} distinct per-user event counts ({len(maxima)} composed)",
    )
    notes.extend(comps[worst].notes)
    return Guarantee(
        epsilon=comps[worst].epsilon,
        delta=delta,
        level=level,
        sides=sides,
        model=model,
        mechanism=_describe_row(events, maxima[worst]),
        notes=tuple(notes),
    )


def _basic_level(
    events: Sequence[DpEvent],
    matrix: np.ndarray,
    level: Literal["event", "user"],
    model: Model,
) -> Guarantee:
    basic = BasicAccountant()
    active = matrix.any(axis=1) if matrix.size else np.zeros(0, dtype=bool)
    if not active.any():
        return _no_events(level, model)
    used = [e for j, e in enumerate(events) if matrix[:, j].any()]
    sides = basic.compose([(e, 1) for e in used]).sides
    direction: Direction = "presence" if sides == "one" else "two"
    pairs = [basic.total_epsilon_delta(e, direction) for e in events]
    eps_vec = np.array([p[0] for p in pairs])
    delta_vec = np.array([p[1] for p in pairs])
    with np.errstate(invalid="ignore"):  # inf x 0 counts
        spent = np.where(matrix > 0, matrix * eps_vec, 0.0).sum(axis=1)
    # among users with eps = inf, the worst is one whose events include a "none" one (not one
    # whose one-sided events are only infinite in the two-sided direction)
    side_rank = np.array([_SIDE_RANK[_weakest(event_sides(x) for x in _flatten([(e, 1)]))]
                          for e in events])
    row_rank = np.where(matrix > 0, side_rank, 0).max(axis=1)
    worst = int(np.lexsort((np.where(np.isinf(spent), row_rank, 0), spent))[-1])
    dlt = float((matrix * delta_vec).sum(axis=1).max())
    return Guarantee(
        epsilon=float(spent[worst]),
        delta=min(1.0, dlt),
        level=level,
        sides=sides,
        model=model,
        mechanism=_describe_row(events, matrix[worst]),
        notes=(
            "basic composition (Dwork & Roth Thm 3.16): sum of per-event epsilons of the "
            "worst-case user",
            *(
                ("shuffled reports counted at their local eps0 (no amplification)",)
                if any(isinstance(e, ShuffledReportDpEvent) for e in used)
                else ()
            ),
        ),
    )


def _single_pure_event(events: Sequence[DpEvent], matrix: np.ndarray) -> bool:
    """Whether every user underwent at most one leaf event, each pure on its own: its basic
    ``(eps, 0)`` is its exact pure epsilon (not a shuffled report, whose basic epsilon is the
    local ``eps0`` and ignores amplification)."""
    leaves = [_flatten([(e, 1)]) for e in events]
    if any(isinstance(x, ShuffledReportDpEvent) for lv in leaves for x in lv):
        return False
    sizes = np.array([sum(lv.values()) for lv in leaves], dtype=np.int64)
    return bool(matrix.size) and int((matrix @ sizes).max()) <= 1


def _prefer_pure(tight: Guarantee, basic: Guarantee, single: bool) -> Guarantee:
    """The pure ``(eps, 0)`` of basic composition in place of the PLD's ``(eps', delta)``
    when it is finite and pure and either no larger (``eps <= eps'``) or the bound of a single
    pure event (whose PLD differs only by the discretisation and an O(delta) shift: a pure
    mechanism is reported as pure). Both are sound; otherwise the PLD's stays."""
    if basic.delta != 0.0 or not math.isfinite(basic.epsilon):
        return tight
    if basic.epsilon <= tight.epsilon:
        why = f"no larger than the PLD analysis (eps={tight.epsilon:.6g} at delta={tight.delta:g})"
        return replace(basic, notes=(*basic.notes, why))
    if single:
        return replace(basic, notes=(
            "a single pure event per user: its exact pure (eps, 0) (the worst-case user's)",
            f"the PLD analysis gives eps={tight.epsilon:.6g} at delta={tight.delta:g}",
        ))
    return tight


def account(
    log: EventLog,
    delta: float,
    accountant: Accountant | None = None,
    *,
    max_groups: int = 64,
    model: Model | None = None,
) -> PrivacyLevels:
    """Event-level and user-level guarantees of the worst-case user in ``log`` at ``delta``.

    ``user``: PLD composition (``accountant``, default :class:`PldAccountant`) of all of the
    worst-case user's events; replaced by basic composition where that is tighter (a pure
    bound also holds at ``delta``), and by the pure ``(eps, 0)`` of a single pure event
    (:func:`_prefer_pure`). ``user_basic``: basic composition of the same events,
    None when an event has no pure epsilon (e.g. Gaussian). ``event``: the same for one
    interaction (every ``unit="user"`` copy, one copy per ``unit="interaction"`` record).
    Users who never underwent an event have eps = 0. ``model``: "shuffled" if the log holds
    shuffled reports, else "local", unless given. Raises :class:`UnsupportedEventError` for
    events the accountant does not know.
    """
    if not 0 < delta < 1:
        raise DprecError(f"delta must be in (0, 1), got {delta}")
    if isinstance(max_groups, bool) or int(max_groups) != max_groups or max_groups < 1:
        raise DprecError(f"max_groups must be an integer >= 1, got {max_groups!r}")
    acc = accountant if accountant is not None else PldAccountant()
    keys, user_matrix = log.count_matrix("user")
    _, event_matrix = log.count_matrix("event")
    events = [e for e, _ in keys]
    for e in events:
        acc.check(e)
    leaves = _flatten((e, 1) for e in events)
    if model is None:
        model = "shuffled" if any(isinstance(e, ShuffledReportDpEvent) for e in leaves) else "local"
    basic_ok = all(BasicAccountant().supports(e) for e in leaves)
    levels = {}
    for level, matrix in (("user", user_matrix), ("event", event_matrix)):
        tight = _pld_level(acc, events, matrix, delta, level, model, int(max_groups))
        basic = _basic_level(events, matrix, level, model) if basic_ok else None
        if basic is not None:
            tight = _prefer_pure(tight, basic, _single_pure_event(events, matrix))
        levels[level] = (tight, basic)
    return PrivacyLevels(
        event=levels["event"][0], user=levels["user"][0], user_basic=levels["user"][1]
    )
