"""The public numbers of a dp-pop round, from the config, the item count and the number of
clients alone (what the simulation, the clients, the proxy and the server all compute).

- Sensitivity of one user's k-hot vector under add/remove one user: ``L1 = k``,
  ``L2 = sqrt(k)`` (k capped at the item count).
- ``mu``: the central Skellam parameter reaching the target (epsilon, delta) by the exact
  PLD of k unit shifts (the accountant's analysis; AKL21's RDP bound where smaller:
  :func:`~dprec.privacy.skellam.calibrate_skellam_mu` with ``unit_shifts = k``).
- Each client adds ``Sk(mu / t)``, ``t = min_honest`` (default: all ``n`` clients), so any
  ``t`` honest shares carry ``Sk(mu)`` and all ``n`` carry ``Sk(mu n / t)``.
- The secure sum: clip 1 in L-inf (a k-hot coordinate is 0 or 1), gamma 1, and the
  narrowest ``q = 2^b`` whose sum of ``n`` vectors plus the noise never wraps but w.p.
  ``2^-40`` (:func:`~dprec.protocol.secure_sum.params.choose_params`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dprec.errors import DprecError
from dprec.mechanisms.skellam import SkellamMechanism
from dprec.privacy.skellam import calibrate_skellam_mu
from dprec.protocol.secure_sum.params import SecureSumParams, choose_params
from dprec.protocol.secure_sum.vdaf.contribution import ContributionCheck, dp_pop_check
from dprec.protocol.secure_sum.vdaf.noise_bounds import choose_truncation
from dprec.systems.dp_pop.config import DpPopConfig

__all__ = ["VALIDITY", "RoundCalibration", "calibrate", "contribution_check", "round_check"]


@dataclass(frozen=True)
class RoundCalibration:
    """Everything public about one dp-pop round."""

    n_clients: int
    min_honest: int
    l1: float
    l2: float
    mechanism: SkellamMechanism
    """The central ``Sk(mu)`` the guarantee is calibrated for."""
    share: SkellamMechanism
    """One client's share ``Sk(mu / min_honest)``."""
    params: SecureSumParams

    @property
    def mu(self) -> float:
        return self.mechanism.mu


def calibrate(config: DpPopConfig, n_items: int, n_clients: int) -> RoundCalibration:
    """The round of ``config`` (dp-pop's fields) over ``n_items`` items and ``n_clients``
    clients (module docstring)."""
    if isinstance(n_clients, bool) or int(n_clients) != n_clients or n_clients < 1:
        raise DprecError(f"n_clients must be an integer >= 1, got {n_clients!r}")
    n = int(n_clients)
    k = min(int(config.k), int(n_items))
    l1, l2 = float(k), math.sqrt(k)
    mech = SkellamMechanism(calibrate_skellam_mu(float(config.epsilon), float(config.delta),
                                                 l1, l2, unit_shifts=k))
    t = n if config.min_honest is None else int(config.min_honest)
    share = mech.share(n, t)
    params = choose_params(dimension=int(n_items), expected_clients=n, clip=1.0, gamma=1.0,
                           norm="linf", noise_variance=share.variance * n)
    return RoundCalibration(n, t, l1, l2, mech, share, params)


VALIDITY = ("none", "prio3")
"""``validity`` of a deployed dp-pop round: ``prio3``, every upload carries a Prio3 proof
that ``y = v + z`` is a k-hot vector plus a truncated share (:func:`contribution_check`)."""


def contribution_check(config: DpPopConfig, n_items: int, n_clients: int
                       ) -> ContributionCheck | None:
    """dp-pop's validity check of ``config`` (None for ``validity = none``): k capped at
    the items, the truncation of each client's ``Sk(mu / min_honest)`` share for ``n``
    clients (``T``, ``S``) and the L2 bound ``B^2``
    (:func:`~dprec.protocol.secure_sum.vdaf.contribution.dp_pop_check`). Every party
    computes it from the public config alone."""
    validity = config.validity
    if validity not in VALIDITY:
        raise DprecError(f"validity must be one of {VALIDITY}, got {validity!r}")
    if validity == "none":
        return None
    return round_check(calibrate(config, n_items, n_clients), n_items)


def round_check(cal: RoundCalibration, n_items: int) -> ContributionCheck:
    """The Prio3 check of a calibrated round: k-hot plus a share of ``Sk(share mu)``
    truncated at the ``T``, ``S`` of :func:`choose_truncation` (``2^-40`` over the n
    clients) and the L2 bound (:func:`dp_pop_check`). Every honest client, simulated or a
    device, redraws its share until it meets them (:mod:`dprec.systems.dp_pop.draws`); a
    first draw breaks them w.p. at most ``eta`` each (``n eta <= 2^-40``, plus ``2^-50``
    each for the L2 bound), so the numbers are those of an unchecked draw but with that
    probability."""
    truncation = choose_truncation(cal.share.mu, int(n_items), cal.n_clients)
    return dp_pop_check(int(n_items), int(cal.l1), truncation)
