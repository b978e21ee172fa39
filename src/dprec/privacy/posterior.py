"""The guarantee of one sample from a scaled posterior (DPPS-PNBM and DPPS-MF, seed 004).

One convention for both samplers. A sampler whose target density is

    pi_D(theta) ~ exp(-beta sum_u l_u(theta; D_u)) x prior(theta),   0 <= l_u <= B,

releases one exact sample of ``pi_D``; the prior and everything else in the exponent do not
depend on the protected data. ``beta`` is the coefficient of the per-user losses in the
log-density the sampler really targets (for SGLD with drift ``(eta/2) g`` and noise
``N(0, s eta)``, ``g / s`` is the gradient of ``beta sum_u l_u``), and ``B`` bounds one
user's loss (here ``sum_i e_ui^2 <= (r_max - r_min)^2 tau``).

For neighbours D, D' the log-ratio of the densities is
``-beta (l_u(theta; D_u) - l_u(theta; D'_u)) + log Z(D') - log Z(D)``:

- replace-one (one user's data replaced): the first term is at most ``beta B`` and
  ``Z(D') / Z(D) = E_{pi_D}[exp(-beta (l'_u - l_u))] <= exp(beta B)``, so one sample is
  ``2 beta B``-DP (the exponential mechanism with a score of sensitivity ``beta B``,
  McSherry & Talwar 2007; Wang, Fienberg, Smola, ICML 2015, Thm 1);
- add/remove-one (one user's data present or absent): ``l_u >= 0`` gives a first term in
  ``[-beta B, 0]`` and a normaliser ratio in ``[1, exp(beta B)]``, so one sample is
  ``beta B``-DP.

Both hold only for an exact sample; a sample ``delta``-far in total variation is
``(eps, (1 + e^eps) delta)``-DP (seed 004, Thm 2).
"""

from __future__ import annotations

import math

from dprec.errors import InvalidParameterError
from dprec.privacy.adjacency import Adjacency, as_adjacency

__all__ = ["posterior_sample_epsilon"]


def posterior_sample_epsilon(beta: float, loss_bound: float,
                             adjacency: Adjacency = Adjacency.REPLACE_ONE) -> float:
    """eps of one exact sample of ``exp(-beta sum_u l_u)``, ``0 <= l_u <= loss_bound``:
    ``2 beta B`` (:attr:`Adjacency.REPLACE_ONE`) or ``beta B``
    (:attr:`Adjacency.ADD_REMOVE_ONE`); see the module docstring. A string is refused."""
    for name, value in (("beta", beta), ("loss_bound", loss_bound)):
        if not (math.isfinite(value) and value > 0):
            raise InvalidParameterError(f"{name} must be finite and > 0, got {value}")
    if as_adjacency(adjacency) is Adjacency.REPLACE_ONE:
        return 2.0 * beta * loss_bound
    return beta * loss_bound
