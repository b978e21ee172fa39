"""The public numbers of a dp-fedavg run, from its config, the item count and the clients
enrolled: what the simulation, the server process, the proxy and the clients must agree on.

- ``dimension = N F`` (one item gradient) and the quantisation scale ``gamma``
  (:func:`~.accounting.choose_gamma` unless the config sets it);
- ``mu``, the Skellam noise of the summed round, calibrated so that ``rounds`` sampled
  releases meet the target (:func:`~.accounting.calibrate_mu`);
- with secure aggregation, ``min_honest`` (default: every client), each client's share
  ``Sk(mu / min_honest)`` and the parameters of each round's secure sum over all N clients
  (:func:`~dprec.protocol.secure_sum.params.choose_params`, L2 clip, the summed shares'
  variance ``2 mu N / min_honest``). Every round has the same parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from dprec.protocol.secure_sum.params import SecureSumParams, choose_params
from dprec.protocol.secure_sum.vdaf.contribution import ContributionCheck, bounded_range_check
from dprec.protocol.secure_sum.vdaf.noise_bounds import choose_truncation, l2_bound_sq
from dprec.systems.dp_fedavg.accounting import calibrate_mu, choose_gamma, update_sensitivity
from dprec.systems.dp_fedavg.config import DpFedAvgConfig

__all__ = ["FedAvgPlan", "plan_of", "update_check"]


@dataclass(frozen=True)
class FedAvgPlan:
    """The public numbers of one run (module docstring); ``min_honest``, ``share_mu`` and
    ``params`` are None with a trusted curator."""

    n_clients: int
    n_items: int
    dimension: int
    gamma: float
    mu: float
    min_honest: int | None
    share_mu: float | None
    params: SecureSumParams | None


def plan_of(config: DpFedAvgConfig, n_items: int, n_clients: int) -> FedAvgPlan:
    """The plan of dp-fedavg's config ``config`` for ``n_items`` items and ``n_clients``
    clients; computed once per (frozen, hashable) config (the proxy asks for every
    upload)."""
    return _plan(config, int(n_items), int(n_clients))


@lru_cache(maxsize=64)
def _plan(c: DpFedAvgConfig, n_items: int, n: int) -> FedAvgPlan:
    dim = n_items * int(c.factors)
    clip = float(c.clip)
    gamma = float(c.gamma) if c.gamma is not None else choose_gamma(dim, clip)
    mu = calibrate_mu(float(c.epsilon), float(c.delta), int(c.rounds), dim, clip,
                      gamma, float(c.rate))
    if c.aggregation != "secure":
        return FedAvgPlan(n, n_items, dim, gamma, mu, None, None, None)
    honest = int(c.min_honest) if c.min_honest is not None else n
    params = choose_params(dimension=dim, expected_clients=n, clip=clip, gamma=gamma,
                           norm="l2", noise_variance=2.0 * mu * n / honest)
    return FedAvgPlan(n, n_items, dim, gamma, mu, honest, mu / honest, params)


def update_check(plan: FedAvgPlan, clip: float) -> ContributionCheck:
    """The Prio3 check of one secure round's update (:func:`bounded_range_check`): every
    coordinate within ``C + T`` (``C = ceil(gamma clip)``, the params' ``client_bound``) and
    ``||y||^2 <= B^2``, ``B`` the quantised update's ``Delta_2 = gamma clip + sqrt(N F)``
    (:func:`update_sensitivity`) widened by the share ``Sk(share_mu)``
    (:func:`l2_bound_sq`)."""
    if plan.params is None or plan.share_mu is None:
        raise ValueError("a validity check needs the secure sum's plan (aggregation=secure)")
    truncation = choose_truncation(plan.share_mu, plan.dimension, plan.n_clients)
    bound_sq, eta = l2_bound_sq(update_sensitivity(plan.dimension, clip, plan.gamma)[1],
                                truncation)
    return bounded_range_check(plan.dimension, plan.params.client_bound, truncation,
                               l2_bound_sq=bound_sq, l2_tv=eta)
