"""What one dp-fedavg round reveals about a user, and the noise that hides it.

Contribution. A sampled client sends ``v = R(gamma g)``: its item gradient ``g`` (``d = N F``
coordinates) clipped to ``||g||_2 <= C`` and quantised by unbiased randomised rounding
``R``, which moves each coordinate by less than 1. An unsampled client sends the zero
vector. Against the zero vector (the user's data absent), by the triangle inequality and
``|v_j| <= v_j^2`` for integers,

    Delta_2 = gamma C + sqrt(d),     Delta_1 = min(sqrt(d) Delta_2, Delta_2^2).

Noise. Every client of the population adds its Skellam share in every round, sampled or
not, so the summed noise ``Sk(mu)`` (from at least ``min_honest`` honest shares) does not
depend on who was sampled, and the server, which sees every client upload, does not learn
who was. The sample is Poisson: each client includes its data with probability ``q``, from
its own generator. A user's data present vs absent is then the add/remove pair of the
Poisson-subsampled Skellam mechanism with the sensitivities above.

Accounting: :mod:`dprec.privacy.sampled_skellam` (Zhu-Wang's bound on the AKL21 Skellam
curve, RDP composition over the rounds).
"""

from __future__ import annotations

import math

import dp_accounting

from dprec.privacy.calibrate import smallest_noise
from dprec.privacy.sampled_skellam import sampled_epsilon
from dprec.privacy.skellam import SkellamDpEvent

__all__ = ["ROUNDING_SLACK", "calibrate_mu", "choose_gamma", "sampled_event",
           "update_sensitivity"]

ROUNDING_SLACK = 0.01
"""The automatic gamma keeps the rounding term ``sqrt(d)`` within 1% of ``gamma C``."""


def update_sensitivity(dimension: int, clip: float, gamma: float) -> tuple[float, float]:
    """(Delta_1, Delta_2) of one quantised clipped update against zero (module docstring)."""
    l2 = gamma * clip + math.sqrt(dimension)
    return min(math.sqrt(dimension) * l2, l2 * l2), l2


def choose_gamma(dimension: int, clip: float) -> float:
    """The smallest gamma with ``sqrt(d) <= ROUNDING_SLACK gamma C``."""
    return math.sqrt(dimension) / (ROUNDING_SLACK * clip)


def sampled_event(mu: float, dimension: int, clip: float, gamma: float, rate: float
                  ) -> dp_accounting.DpEvent:
    """One round: ``PoissonSampledDpEvent(q, SkellamDpEvent(mu, Delta_1, Delta_2))``, or the
    Skellam event alone at ``q = 1``."""
    l1, l2 = update_sensitivity(dimension, clip, gamma)
    event = SkellamDpEvent(float(mu), l1, l2)
    return event if rate == 1 else dp_accounting.PoissonSampledDpEvent(float(rate), event)


def calibrate_mu(epsilon: float, delta: float, rounds: int, dimension: int, clip: float,
                 gamma: float, rate: float, rtol: float = 1e-6) -> float:
    """The smallest Skellam ``mu`` (to ``rtol``, rounded up: more noise) whose ``rounds``
    sampled releases meet ``epsilon`` at ``delta``
    (:func:`dprec.privacy.calibrate.smallest_noise`)."""

    def eps_of(mu: float) -> float:
        return sampled_epsilon(sampled_event(mu, dimension, clip, gamma, rate), rounds, delta)

    return smallest_noise(eps_of, epsilon, rtol=rtol, what="mu")
