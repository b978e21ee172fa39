"""Poisson-subsampled Skellam releases: their RDP curve and an accountant that composes them.

A release adds ``Sk(mu)`` to an integer vector with sensitivities ``(Delta_1, Delta_2)`` (a
:class:`~dprec.privacy.skellam.SkellamDpEvent`); each user's data is in it with probability
``q`` (Poisson sampling, ``PoissonSampledDpEvent``). The RDP of the Poisson-subsampled
mechanism is bounded by the general upper bound of Zhu and Wang ("Poisson Subsampled Renyi
Differential Privacy", ICML 2019, Thm 6), valid for any mechanism with RDP ``eps(l)`` at the
integer orders ``l <= alpha``:

    eps'(alpha) <= log[(1 - q)^(alpha-1) (alpha q - q + 1)
                       + C(alpha, 2) q^2 (1 - q)^(alpha-2) e^eps(2)
                       + 3 sum_{l=3}^alpha C(alpha, l) q^l (1 - q)^(alpha-l) e^((l-1) eps(l))]
                  / (alpha - 1),

with ``eps(l)`` the Skellam bound (Agarwal, Kairouz, Liu, NeurIPS 2021, Thm 3.5;
:func:`dprec.privacy.skellam.skellam_rdp`), which holds in both directions; the minimum of
this and the unsampled ``eps(alpha)`` (joint convexity) is used, as ``skellam_epsilon`` of
google-research/federated ``distributed_dp/accounting_utils.py`` does. Rounds compose by
adding RDP curves; the improved conversion (Canonne, Kamath, Steinke 2020) gives epsilon.

Sound but loose (issue 33 §5): against dp-accounting's PLD of the Poisson-subsampled Gaussian
of the same variance (``sigma^2 = 2 mu``; a reference, not a bound: Skellam's loss tail is
not the Gaussian's), at dp-fedavg's calibration for epsilon 1, delta 1e-6, d = 3364,
C = 2, the bound is 1.68x the reference at q = 0.2 over 10 rounds, 2.94x over 50, and 2.45x
at q = 0.05 over 40 rounds, 5.95x over 200: the gap grows with the rounds and the noise. No
tighter sound analysis of the subsampled multi-dimensional Skellam release is implemented
yet; :func:`gaussian_reference_epsilon` computes that reference for a run's own parameters, so
its privacy report states its own factor.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import ClassVar

import dp_accounting
import numpy as np
from dp_accounting.rdp import rdp_privacy_accountant
from scipy.special import gammaln, logsumexp

from dprec.errors import DprecError
from dprec.privacy.accountant import Composition
from dprec.privacy.adjacency import Adjacency
from dprec.privacy.rdp_accountant import RdpAccountant
from dprec.privacy.skellam import SKELLAM_ORDERS, SkellamDpEvent, skellam_rdp

__all__ = ["SampledSkellamAccountant", "gaussian_reference_epsilon", "sampled_epsilon",
           "sampled_skellam_rdp"]


def sampled_skellam_rdp(event: SkellamDpEvent, rate: float,
                        orders: Iterable[int] = SKELLAM_ORDERS) -> np.ndarray:
    """The RDP curve of one Poisson-subsampled Skellam release at integer ``orders``: the
    smaller of Zhu-Wang's general upper bound and the unsampled curve (module docstring)."""
    a = np.asarray(list(orders), dtype=np.int64)
    if not 0 < rate <= 1:
        raise DprecError(f"the sampling rate must be in (0, 1], got {rate}")
    plain = skellam_rdp(event, a.tolist())
    if rate == 1:
        return plain
    top = int(a.max())
    ls = np.arange(2, top + 1)
    eps = skellam_rdp(event, ls.tolist())  # eps(l) at l = 2..top
    lq, l1q = math.log(rate), math.log1p(-rate)
    out = np.empty(a.shape)
    for j, alpha in enumerate(a.tolist()):
        ell = ls[: alpha - 1]  # 2..alpha
        log_comb = gammaln(alpha + 1) - gammaln(ell + 1) - gammaln(alpha - ell + 1)
        terms = log_comb + ell * lq + (alpha - ell) * l1q + (ell - 1) * eps[: alpha - 1]
        terms[1:] += math.log(3.0)  # l >= 3
        first = (alpha - 1) * l1q + math.log(alpha * rate - rate + 1)
        out[j] = logsumexp(np.concatenate(([first], terms))) / (alpha - 1)
    return np.minimum(out, plain)


def _curve(leaves: dict, orders: tuple[int, ...]) -> np.ndarray:
    total = np.zeros(len(orders))
    for event, count in leaves.items():
        if isinstance(event, dp_accounting.NoOpDpEvent):
            continue
        if isinstance(event, SkellamDpEvent):
            total += count * skellam_rdp(event, list(orders))
        else:
            total += count * sampled_skellam_rdp(event.event, event.sampling_probability,
                                                 orders)
    return total


def sampled_epsilon(event: dp_accounting.DpEvent, rounds: int, delta: float) -> float:
    """Epsilon at ``delta`` of ``rounds`` adaptive rounds of ``event`` (zero-out adjacency;
    add/remove one gives the same)."""
    return SampledSkellamAccountant().compose([(event, rounds)], delta).epsilon


class SampledSkellamAccountant(RdpAccountant):
    """RDP composition of Skellam releases, Poisson-subsampled or not (module docstring):
    ``SkellamDpEvent``, ``PoissonSampledDpEvent`` of one, and ``NoOpDpEvent``. dprec's
    :class:`~dprec.privacy.rdp_accountant.RdpAccountant` knows the subsampled Gaussian only;
    this adds the subsampled Skellam.

    ``adjacency``: :attr:`Adjacency.ZERO_OUT` (the secure sum: every client's share stays in
    the sum, and a user's data is in it with probability q or not at all) or
    :attr:`Adjacency.ADD_REMOVE_ONE` (a trusted curator's draw); both are the add/remove pair
    of the Poisson-subsampled release with the same noise on both sides, which the bound
    covers. Replace-one is refused (its sensitivity would be twice as large)."""

    name: ClassVar[str] = "rdp"

    def __init__(self, adjacency: Adjacency = Adjacency.ZERO_OUT) -> None:
        if adjacency not in (Adjacency.ZERO_OUT, Adjacency.ADD_REMOVE_ONE):
            raise DprecError(f"the sampled Skellam bound holds under zero-out or add/remove "
                             f"one adjacency, got {adjacency!r}")
        super().__init__(adjacency)

    def _supports_leaf(self, event: dp_accounting.DpEvent) -> bool:
        if isinstance(event, SkellamDpEvent | dp_accounting.NoOpDpEvent):
            return True
        return (isinstance(event, dp_accounting.PoissonSampledDpEvent)
                and isinstance(event.event, SkellamDpEvent)
                and 0 < event.sampling_probability <= 1)

    def compose(self, events: Iterable[tuple[dp_accounting.DpEvent, int]],
                delta: float) -> Composition:
        """Epsilon at ``delta``: the curves added, the improved conversion."""
        if not 0 < delta < 1:
            raise DprecError(f"delta must be in (0, 1), got {delta}")
        leaves = {e: c for e, c in self._leaves(events).items() if c > 0}
        if not any(not isinstance(e, dp_accounting.NoOpDpEvent) for e in leaves):
            return Composition(0.0, 0.0, "two", ("no events: eps = 0",))
        orders = SKELLAM_ORDERS
        eps, _ = rdp_privacy_accountant.compute_epsilon(
            np.asarray(orders, float), _curve(leaves, orders), delta)
        return Composition(float(eps), delta, "two", (
            f"RDP composition ({self.adjacency.describe()}), improved RDP-to-DP conversion",
            "Skellam RDP of Agarwal, Kairouz, Liu (NeurIPS 2021, Thm 3.5) on integer orders; "
            "Poisson subsampling by the general upper bound of Zhu & Wang (ICML 2019, Thm 6)"))


def gaussian_reference_epsilon(event: SkellamDpEvent, rate: float, rounds: int,
                               delta: float) -> float:
    """Epsilon at ``delta`` of ``rounds`` Poisson-subsampled Gaussian releases of the same
    variance (``sigma^2 = 2 mu``, L2 sensitivity ``Delta_2``): dp-accounting's PLD accountant
    (add/remove one, discretisation 1e-3). A REFERENCE for how loose the sampled Skellam bound
    is, not a bound on the Skellam release (its loss tail is not the Gaussian's)."""
    if not 0 < rate <= 1:
        raise DprecError(f"the sampling rate must be in (0, 1], got {rate}")
    if rounds < 1 or not 0 < delta < 1:
        raise DprecError(f"rounds must be >= 1 and delta in (0, 1), got {rounds}, {delta}")
    from dp_accounting.pld import pld_privacy_accountant

    gauss = dp_accounting.GaussianDpEvent(math.sqrt(2 * event.mu) / event.l2_sensitivity)
    acc = pld_privacy_accountant.PLDAccountant(
        neighboring_relation=dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE,
        value_discretization_interval=1e-3)
    acc.compose(dp_accounting.PoissonSampledDpEvent(rate, gauss) if rate < 1 else gauss, rounds)
    return float(acc.get_epsilon(delta))
