"""What the secure sum releases in one dpals round: the exact integer sum plus the noise.

- ``trusted``: a central curator adds one ``Sk(mu)`` draw to the exact sum (the central
  model of DPALS).
- ``secure``: each of the ``n`` clients adds its share ``Sk(mu / t)`` (``t`` = min_honest,
  default ``n``) to its own quantised vector and the secure sum releases the integer sum,
  which the issue lets the in-process simulation compute directly. Any ``t`` honest shares
  alone carry ``Sk(mu)``. ``shares="per-client"`` draws every client's share from its own
  generator (what the services do, ``O(n d)`` draws); ``shares="summed"`` draws their sum
  ``Sk(n mu / t)`` at once, the same distribution (Poisson parts add; AKL21), in ``O(d)``.
"""

from __future__ import annotations

import numpy as np

from dprec.mechanisms.skellam import SkellamMechanism
from dprec.protocol.secure_sum.noise_shares import noise_share
from dprec.random import derive_generator
from dprec.systems.dpals.config import Aggregation, ShareDraws

__all__ = ["Aggregation", "ShareDraws", "noisy_release"]


def noisy_release(exact: np.ndarray, mu: float, aggregation: Aggregation, n_clients: int,
                  min_honest: int | None, seed: int, release: str, round_id: int,
                  shares: ShareDraws = "summed") -> np.ndarray:
    """``exact`` plus the round's Skellam noise (int64, module docstring)."""
    exact = np.asarray(exact, dtype=np.int64)
    if aggregation == "trusted":
        rng = derive_generator(seed, "dpals", "curator", release, round_id)
        return exact + SkellamMechanism(mu).noise(exact.shape, rng)
    share = SkellamMechanism(mu).share(n_clients, min_honest)
    if shares == "summed":
        rng = derive_generator(seed, "dpals", "shares", release, round_id)
        return exact + SkellamMechanism(share.mu * n_clients).noise(exact.shape, rng)
    total = exact.copy()
    for user in range(n_clients):
        total += noise_share(share.mu, exact.shape, seed, release, round_id, user)
    return total
