"""DP-PrivRec's published accounting (seed 002, Table 3), reproduced as the system's claim.

The paper composes the Gaussian step ``rounds x M`` times (over-counting by ``M``: each round
is one step of a fixed-size batch of ``M`` of the ``N`` users) and converts RDP to DP with the
classic conversion (Mironov 2017, Prop. 3). The correct figure, the accountant over the run's
events, is ``privacy.true``.
"""

from __future__ import annotations

from dprec.privacy.gaussian import Sampling, gaussian_rdp_epsilon

__all__ = ["paper_epsilon"]


def paper_epsilon(noise_multiplier: float, clients_per_round: int, population: int,
                  rounds: int, delta: float) -> float:
    """eps at ``delta`` as DP-PrivRec reports it: ``rounds x M`` fixed-size (replace-one)
    subsampled Gaussian steps at rate ``M / N``, classic RDP-to-DP conversion; 0 before any
    round."""
    if not rounds:
        return 0.0
    return gaussian_rdp_epsilon(noise_multiplier, clients_per_round / population,
                                rounds * clients_per_round, delta, Sampling.FIXED_SIZE,
                                dataset_size=population, conversion="classic")
