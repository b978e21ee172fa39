"""Privacy-loss-distribution composition (dp-accounting's ``pld``) of dominating pairs, the
tightest sound analysis here (Zhu, Dong, Wang, AISTATS 2022: dominating pairs compose
adaptively; losses rounded up, so the result is an upper bound).

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
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

import dp_accounting
import numpy as np
from dp_accounting.pld import privacy_loss_distribution as pld
from scipy.special import expit

from dprec.errors import DprecError, check_positive
from dprec.privacy.accountant import (
    LOCAL_REPORTS,
    Accountant,
    Composition,
    Direction,
    DpEvent,
    UnsupportedEventError,
    event_sides,
    is_noop,
    weakest_sides,
)
from dprec.privacy.adjacency import Adjacency, as_adjacency
from dprec.privacy.bit_vector import MAX_EXACT_BITS, bit_vector_epsilon
from dprec.privacy.events import (
    BitFlipDpEvent,
    LocalReportDpEvent,
    ShuffledReportDpEvent,
    describe_event,
)
from dprec.privacy.guarantee import Sides
from dprec.privacy.rdp_accountant import RdpAccountant
from dprec.privacy.shuffle import clone_pair_pld
from dprec.privacy.skellam import SkellamDpEvent, skellam_pld

__all__ = ["PldAccountant"]

# A loss within 1e-6 of a grid point (in grid units) is snapped to it before rounding up, so
# that e.g. eps = 1 lies on the 1e-4 grid despite floating point (costs <= 1e-6 x interval).
_SNAP = 1e-6
_MAX_DENSE_BINS = 50_000_000
_MAX_LAPLACE_PLD_EPS = 20.0
"""Above this per-event eps a Laplace event is composed as pure eps-DP: dp_accounting's
Laplace PLD spans 2 eps / interval bins, and the gain over pure composition is negligible."""


def _one_bit_vector(leaves: dict[DpEvent, int]) -> tuple[tuple[float, float], int] | None:
    """((p, q), count) when the composition is ``count`` two-sided flips of one (p, q) (plus
    no-ops): the bits of one vector, flipped at once (:mod:`dprec.privacy.bit_vector`)."""
    flips = [(e, c) for e, c in leaves.items() if not is_noop(e)]
    if len(flips) != 1 or not isinstance(flips[0][0], BitFlipDpEvent):
        return None
    event, count = flips[0]
    if not 0.0 < event.q < event.p < 1.0 or not 1 <= count <= MAX_EXACT_BITS:
        return None
    return (float(event.p), float(event.q)), int(count)


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
    :class:`~dprec.privacy.accountant.Accountant`).

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
        return self.adjacency is Adjacency.REPLACE_ONE and isinstance(event, LOCAL_REPORTS)

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
        if is_noop(event):
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
        sides = weakest_sides(event_sides(e) for e in leaves)
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
