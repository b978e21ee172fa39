"""Renyi-DP accounting of the Skellam mechanism (Agarwal, Kairouz, Liu, NeurIPS 2021).

The mechanism adds ``Sk(mu) = Poisson(mu) - Poisson(mu)`` (variance ``2 mu``) independently
to every coordinate of an integer vector. For a query whose value changes by at most
``Delta_1`` in L1 norm and ``Delta_2`` in L2 norm between neighbouring inputs, it is
``(alpha, eps(alpha))``-RDP for every integer order ``alpha > 1`` with (the paper's
Theorem 3.5; ``_skellam_rdp`` of google-research/federated ``distributed_dp/
accounting_utils.py`` is the same formula written for the unscaled domain, variance
``s^2 sigma^2 = 2 mu``)

    eps(alpha) = alpha Delta_2^2 / (4 mu)
                 + min(((2 alpha - 1) Delta_2^2 + 6 Delta_1) / (16 mu^2), 3 Delta_1 / (4 mu)).

Rounds compose by adding RDP curves; the curve is turned into ``(eps, delta)`` by the
improved conversion (Canonne, Kamath, Steinke 2020, Prop. 12; dp-accounting's
``compute_epsilon``), minimised over :data:`SKELLAM_ORDERS` (integer orders only, where the
theorem holds).

The sensitivities are those of the integer vector the noise is added to, under the
accountant's neighbouring relation (as ``GaussianDpEvent``'s noise multiplier is relative to
its sensitivity): a user's k-hot contribution under add/remove-one-user adjacency has
``Delta_1 = k`` and ``Delta_2 = sqrt(k)``.

Exact analysis of unit shifts (privacy loss distributions). When the neighbouring integer
vectors differ by a vector ``v`` with entries in ``{-1, 0, +1}`` and at most ``k`` nonzero
(``SkellamDpEvent.unit_shifts = k``: a k-hot contribution under add/remove one user; ``2k``
under replace one), the pair ``(Sk(mu)^d + v, Sk(mu)^d)`` is dominated by the k-fold product
of the 1-D pair ``(Sk(mu) + 1, Sk(mu))``, in both directions:

- coordinates are independent, so the privacy loss is the sum of per-coordinate losses and
  its distribution the convolution (composition) of theirs; a coordinate with ``v_i = 0``
  has loss 0;
- ``v_i = -1``: ``y -> -y`` maps ``(Sk - 1, Sk)`` onto ``(Sk + 1, Sk)`` (Skellam is
  symmetric), and a bijection keeps every hockey-stick divergence;
- fewer than ``k`` nonzeros: the pair with one shift fewer is a post-processing of the one
  with ``k`` (replace that coordinate by fresh ``Sk(mu)`` noise), so it is dominated;
- the reverse direction ``(Sk^d, Sk^d + v)`` ("remove" vs "add"): ``y -> v - y`` maps
  ``Sk^d + v`` to ``-Sk^d ~ Sk^d`` and ``Sk^d`` to ``v - Sk^d ~ Sk^d + v``, so it has the
  same privacy loss distribution, and one symmetric PLD covers both.

:func:`skellam_unit_shift_pld` builds the 1-D PLD from the exact pmf (``P(Sk(mu) = y) =
e^{-2 mu} I_|y|(2 mu)``, scipy's ``ive``) on a window holding all but a Chernoff-bounded
tail, which is counted as infinite loss; losses are rounded up to the grid (pessimistic).
The k-fold product and ``count`` rounds are dp-accounting self-compositions, so the epsilon
is an upper bound, within about ``k count`` grid steps of the exact one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attr
import dp_accounting
import numpy as np
from dp_accounting.pld import privacy_loss_distribution as pld
from dp_accounting.rdp import rdp_privacy_accountant
from scipy.special import ive

from dprec.errors import DprecError
from dprec.privacy.calibrate import bisect, smallest_noise

__all__ = [
    "SKELLAM_ORDERS",
    "SkellamDpEvent",
    "calibrate_skellam_mu",
    "skellam_epsilon",
    "skellam_exact_epsilon",
    "skellam_pld",
    "skellam_rdp",
    "skellam_tail_bound",
    "skellam_tight_epsilon",
    "skellam_unit_shift_pld",
]

SKELLAM_ORDERS: tuple[int, ...] = (*range(2, 257), 320, 384, 512, 768, 1024, 2048, 4096)
"""Integer RDP orders (the bound is proved for integer ``alpha > 1``)."""


def _check_finite_positive(name: str, value: float) -> float:
    v = float(value)
    if not (v > 0 and math.isfinite(v)):
        raise DprecError(f"{name} must be finite and > 0, got {value}")
    return v


@attr.s(frozen=True, slots=True, auto_attribs=True)
class SkellamDpEvent(dp_accounting.DpEvent):
    """``Sk(mu)`` noise (``Poisson(mu) - Poisson(mu)`` per coordinate) added once to an
    integer vector with L1 sensitivity ``l1_sensitivity`` and L2 sensitivity
    ``l2_sensitivity`` under the accountant's neighbouring relation (``l2 <= l1``).

    ``unit_shifts``: ``k`` when every pair of neighbouring vectors differs by ``+-1`` in at
    most ``k`` coordinates and nowhere else (a k-hot vector: then ``l1 = k``,
    ``l2 = sqrt(k)``), which admits the exact PLD analysis (module docstring); None when only
    the sensitivities are known (RDP bound only). :meth:`k_hot` builds such an event.
    """

    mu: float
    l1_sensitivity: float
    l2_sensitivity: float
    unit_shifts: int | None = None

    def __attrs_post_init__(self) -> None:
        _check_finite_positive("mu", self.mu)
        _check_finite_positive("l1_sensitivity", self.l1_sensitivity)
        _check_finite_positive("l2_sensitivity", self.l2_sensitivity)
        if self.l2_sensitivity > self.l1_sensitivity * (1 + 1e-12):
            raise DprecError(f"l2_sensitivity must be <= l1_sensitivity (||v||_2 <= ||v||_1), "
                             f"got l2={self.l2_sensitivity}, l1={self.l1_sensitivity}")
        k = self.unit_shifts
        if k is None:
            return
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise DprecError(f"unit_shifts must be None or an integer >= 1, got {k!r}")
        if (not math.isclose(self.l1_sensitivity, k, rel_tol=1e-9)
                or not math.isclose(self.l2_sensitivity, math.sqrt(k), rel_tol=1e-9)):
            raise DprecError(f"unit_shifts={k} means l1_sensitivity = {k} and l2_sensitivity = "
                             f"sqrt({k}), got l1={self.l1_sensitivity}, "
                             f"l2={self.l2_sensitivity}; use SkellamDpEvent.k_hot(mu, k)")

    @classmethod
    def k_hot(cls, mu: float, k: int) -> SkellamDpEvent:
        """Neighbouring vectors differ by ``+-1`` in at most ``k`` coordinates (e.g. a k-hot
        contribution under add/remove one user): ``(mu, k, sqrt(k), unit_shifts=k)``."""
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise DprecError(f"k must be an integer >= 1, got {k!r}")
        return cls(float(mu), float(k), math.sqrt(int(k)), int(k))


def _orders(orders: Sequence[int] | None) -> np.ndarray:
    a = np.asarray(SKELLAM_ORDERS if orders is None else orders, dtype=np.float64)
    if a.ndim != 1 or not a.size or np.any(a < 2) or np.any(a != np.floor(a)):
        raise DprecError(f"orders must be integers >= 2 (the Skellam RDP bound holds for "
                         f"integer orders), got {orders!r}")
    return a


def skellam_rdp(event: SkellamDpEvent, orders: Sequence[int] | None = None) -> np.ndarray:
    """The RDP curve ``eps(alpha)`` of one :class:`SkellamDpEvent` at integer ``orders``
    (default :data:`SKELLAM_ORDERS`), AKL21 Theorem 3.5 (formula in the module docstring)."""
    a = _orders(orders)
    mu, d1, d2 = float(event.mu), float(event.l1_sensitivity), float(event.l2_sensitivity)
    second = np.minimum(((2 * a - 1) * d2 * d2 + 6 * d1) / (16 * mu * mu), 3 * d1 / (4 * mu))
    return a * d2 * d2 / (4 * mu) + second


def skellam_epsilon(event: SkellamDpEvent, delta: float, count: int = 1,
                    orders: Sequence[int] | None = None) -> float:
    """Epsilon at ``delta`` of ``count`` adaptive rounds of ``event``: ``count`` times the RDP
    curve, converted by dp-accounting's ``compute_epsilon`` (CKS20 improved conversion)."""
    if not 0 < delta < 1:
        raise DprecError(f"delta must be in (0, 1), got {delta}")
    if isinstance(count, bool) or int(count) != count or count < 1:
        raise DprecError(f"count must be an integer >= 1, got {count!r}")
    a = _orders(orders)
    rdp = int(count) * skellam_rdp(event, a.astype(int).tolist())
    eps, _ = rdp_privacy_accountant.compute_epsilon(a, rdp, delta)
    return float(eps)


_PLD_TAIL = 1e-18
"""Upper bound on the upper distribution's mass outside the 1-D window (counted as
infinite loss): negligible against any delta, and pessimistic."""
_LOSS_GUARD = 1e-12
"""Added to every loss before rounding up: covers the float error of ``log ive``."""


def skellam_tail_bound(mu: float, t: float) -> float:
    """Chernoff bound ``P(Sk(mu) >= t) <= exp(2 mu (cosh s - 1) - s t)`` at its minimiser
    ``s = asinh(t / (2 mu))`` (the MGF of ``Sk(mu)`` is ``exp(2 mu (cosh s - 1))``), i.e.
    ``exp(2 mu (sqrt(1 + x^2) - 1) - t asinh(x))``, ``x = t / (2 mu)``, for ``t >= 0``."""
    m = _check_finite_positive("mu", mu)
    if not t >= 0:
        raise DprecError(f"t must be >= 0, got {t}")
    x = float(t) / (2 * m)
    return math.exp(min(0.0, 2 * m * (math.sqrt(1 + x * x) - 1) - float(t) * math.asinh(x)))


def skellam_unit_shift_pld(mu: float, value_discretization_interval: float = 1e-4
                           ) -> pld.PrivacyLossDistribution:
    """Pessimistic PLD of the 1-D pair ``(Sk(mu) + 1, Sk(mu))``, symmetric (the reverse pair
    has the same PLD: module docstring).

    Outcomes ``y`` in ``[1 - T, T]`` carry the loss ``ln P(y - 1) - ln P(y)`` (``P`` the
    ``Sk(mu)`` pmf, ``ln ive(|y|, 2 mu)``) with mass ``P(y - 1)``, rounded up to the grid
    (as ``from_two_probability_mass_functions`` with ``pessimistic_estimate=True``, here
    vectorised); the mass of ``Sk(mu) + 1`` outside the window, at most
    ``2`` :func:`skellam_tail_bound` ``(mu, T) <= 1e-18``, is the infinite-loss mass.
    """
    m = _check_finite_positive("mu", mu)
    iv = _check_finite_positive("value_discretization_interval", value_discretization_interval)
    t = max(1, math.ceil(math.sqrt(2 * m)))
    while 2 * skellam_tail_bound(m, t) > _PLD_TAIL:
        t = math.ceil(1.25 * t) + 1
    y = np.arange(1 - t, t + 1)
    log_lower = np.log(ive(np.abs(y), 2 * m))
    log_upper = np.log(ive(np.abs(y - 1), 2 * m))
    if not (np.all(np.isfinite(log_lower)) and np.all(np.isfinite(log_upper))):
        raise DprecError(f"the Skellam pmf underflows for mu={m} (window {t}); "
                         "use the RDP bound (SkellamDpEvent without unit_shifts)")
    index = np.ceil((log_upper - log_lower + _LOSS_GUARD) / iv).astype(np.int64)
    uniq, inv = np.unique(index, return_inverse=True)
    probs = np.bincount(inv, weights=np.exp(log_upper))
    inf_mass = 2 * skellam_tail_bound(m, t)
    return pld.PrivacyLossDistribution.create_from_rounded_probability(
        dict(zip(uniq.tolist(), probs.tolist(), strict=True)), inf_mass, iv,
        pessimistic_estimate=True)


def _unit_shifts(event: SkellamDpEvent) -> int:
    if not isinstance(event, SkellamDpEvent) or event.unit_shifts is None:
        raise DprecError(f"the PLD analysis needs a SkellamDpEvent with unit_shifts (k-hot: "
                         f"SkellamDpEvent.k_hot(mu, k)), got {event!r}")
    return int(event.unit_shifts)


def skellam_pld(event: SkellamDpEvent, count: int = 1,
                value_discretization_interval: float = 1e-4) -> pld.PrivacyLossDistribution:
    """PLD of ``count`` adaptive rounds of a unit-shift ``event``: the 1-D
    :func:`skellam_unit_shift_pld` self-composed ``unit_shifts`` times (the k coordinates),
    then ``count`` times (the rounds). Pessimistic: an upper bound on epsilon."""
    k = _unit_shifts(event)
    if isinstance(count, bool) or int(count) != count or count < 1:
        raise DprecError(f"count must be an integer >= 1, got {count!r}")
    one = skellam_unit_shift_pld(event.mu, value_discretization_interval)
    out = one.self_compose(k) if k > 1 else one
    return out.self_compose(int(count)) if count > 1 else out


def skellam_tight_epsilon(event: SkellamDpEvent, delta: float, count: int = 1,
                          value_discretization_interval: float = 1e-4) -> tuple[float, str]:
    """(epsilon, analysis) at ``delta`` of ``count`` rounds of ``event``: the smaller of the
    PLD bound (:func:`skellam_pld`, "pld") and the RDP bound (:func:`skellam_epsilon`,
    "rdp") when ``event.unit_shifts`` is set (both are sound upper bounds), else the RDP
    bound."""
    rdp = skellam_epsilon(event, delta, count)
    if event.unit_shifts is None:
        return rdp, "rdp"
    exact = max(0.0, float(skellam_pld(event, count, value_discretization_interval)
                           .get_epsilon_for_delta(delta)))
    return (exact, "pld") if exact <= rdp else (rdp, "rdp")


def calibrate_skellam_mu(epsilon: float, delta: float, l1_sensitivity: float,
                         l2_sensitivity: float, count: int = 1, rtol: float = 1e-6, *,
                         unit_shifts: int | None = None,
                         value_discretization_interval: float = 1e-4) -> float:
    """The smallest ``mu`` (to relative tolerance ``rtol``, rounded up: toward more noise)
    with epsilon ``<= epsilon`` for ``count`` rounds at ``delta``: by
    :func:`skellam_tight_epsilon` (the PLD analysis at ``value_discretization_interval``,
    the accountant's, or RDP where smaller) when ``unit_shifts`` is given (then
    ``l1 = unit_shifts``, ``l2 = sqrt(unit_shifts)``), else by :func:`skellam_epsilon`.

    :func:`dprec.privacy.calibrate.smallest_noise` (the bounds decrease in ``mu``): the
    returned ``mu`` always meets the target, and ``mu / (1 + rtol)`` may not. The search
    stops below ``mu = 1e-3``, where the pmf of the PLD analysis underflows.
    """
    _check_finite_positive("epsilon", epsilon)

    def eps_of(mu: float) -> float:
        event = SkellamDpEvent(mu, l1_sensitivity, l2_sensitivity, unit_shifts)
        if unit_shifts is None:
            return skellam_epsilon(event, delta, count)
        return skellam_tight_epsilon(event, delta, count, value_discretization_interval)[0]

    return smallest_noise(eps_of, epsilon, rtol=rtol, lower=1e-3, upper=1e15, what="mu")


def skellam_exact_epsilon(mu: float, delta: float, shift: int = 1, tol: float = 1e-9) -> float:
    """The exact epsilon at ``delta`` of one release of a 1-D count through ``Sk(mu)`` with
    the count changed by ``shift``: the smallest eps with hockey-stick divergence
    ``sum_y max(0, P(y) - e^eps Q(y)) <= delta``, ``P = Sk(mu) + shift``, ``Q = Sk(mu)``
    (symmetric in the two directions), from scipy's pmf on a support holding all but
    ``1e-30`` of the mass, by bisection to ``tol`` (rounded up). A reference for audits:
    what no test can beat, below the RDP bound of :func:`skellam_epsilon`."""
    from scipy import stats

    m = _check_finite_positive("mu", mu)
    if not 0 < delta < 1:
        raise DprecError(f"delta must be in (0, 1), got {delta}")
    if isinstance(shift, bool) or int(shift) != shift or shift < 1:
        raise DprecError(f"shift must be an integer >= 1, got {shift!r}")
    half = int(m + 12 * math.sqrt(2 * m) + 60)
    y = np.arange(-half, half + int(shift) + 1)
    p = stats.skellam.pmf(y - int(shift), m, m)
    q = stats.skellam.pmf(y, m, m)

    def hockey(eps: float) -> float:
        return float(np.maximum(p - math.exp(eps) * q, 0.0).sum())

    lo, hi = 0.0, 1.0
    while hockey(hi) > delta:
        lo, hi = hi, 2 * hi
    return bisect(lambda eps: hockey(eps) > delta, lo, hi, tol)[1]
