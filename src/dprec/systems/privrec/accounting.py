"""DP-PrivRec's Table 3 (seed 002) reproduced, explained and corrected, and the noise of one
DP-PrivRec round as implemented.

DP-PrivRec draws fixed-size batches of M of the N training users without replacement
(replace-one adjacency, sensitivity 2S/M) for 1000 rounds with noise multiplier z. Its
Table 3 is reproduced cell by cell (relative error < 1e-4) only by composing the Gaussian
step 1000 x M times with the classic RDP-to-DP conversion: the paper over-counts by a factor
M. The correct accounting of what Algorithm 2 does composes 1000 steps of the
sampled-without-replacement Gaussian (dp-accounting's RDP accountant, improved conversion);
the PLD accountant under Poisson sampling is shown beside it, labelled as a different sampling
scheme (:mod:`dprec.privacy.gaussian`).
"""

from __future__ import annotations

import math
from typing import Any

from dprec.errors import DprecError, check_positive
from dprec.privacy.adjacency import Adjacency
from dprec.privacy.gaussian import ADJACENCY, Sampling, gaussian_rdp_epsilon, pld_poisson_epsilon

__all__ = [
    "PRIVREC_DELTAS",
    "PRIVREC_PAPER_TABLE",
    "PRIVREC_ROUNDS",
    "PRIVREC_USERS",
    "TABLE_ADJACENCY",
    "TABLE_COLUMNS",
    "privrec_effective_noise",
    "privrec_noise_multipliers",
    "privrec_table",
]

PRIVREC_USERS = 4800
PRIVREC_ROUNDS = 1000
PRIVREC_DELTAS = (1e-8, 1e-6, 1e-4)
PRIVREC_PAPER_TABLE: dict[int, tuple[float, float, float]] = {
    5: (1.7439, 1.3602, 0.9764),
    10: (3.2117, 2.7511, 2.2535),
    15: (5.9705, 5.2030, 4.3074),
    20: (9.4736, 8.3223, 6.9235),
    25: (13.7047, 12.1696, 10.2052),
    30: (18.9107, 16.6081, 14.3056),
}
"""DP-PrivRec Table 3: eps at delta = 1e-8 / 1e-6 / 1e-4 for q = M / 4800, z = 1, 1000 rounds."""

TABLE_COLUMNS = ("paper", "reproduced", "rdp_without_replacement", "pld_poisson")
"""The figures of each row of :func:`privrec_table`."""
TABLE_ADJACENCY: dict[str, Adjacency] = {
    "paper": Adjacency.REPLACE_ONE,
    "reproduced": Adjacency.REPLACE_ONE,
    **ADJACENCY,
}
"""Neighbouring relation of each column of :func:`privrec_table`: the paper's and our
reproduction of its accounting are replace-one (fixed-size batches), beside
:data:`dprec.privacy.gaussian.ADJACENCY`'s accountants."""


def privrec_noise_multipliers(z: float = 1.0, h: float = 0.7, server_lr: float = 1.0,
                              b_sensitivity_over_m: float = 1.0) -> tuple[float, float, float]:
    """(z_D, z_b, z_eff) of one DP-PrivRec round as implemented: two Gaussian queries.

    The update query alpha3 sum(Delta)/M has replace-one sensitivity 2 alpha3 S / M and noise
    sigma_D = (2 S z / M) sqrt(1/(1 - h)) added after the alpha3 scaling (Algorithm 2 line 9):
    z_D = z / (alpha3 sqrt(1 - h)). The clip indicator's mean has sensitivity
    ``b_sensitivity_over_m`` / M (1/M replace-one; the paper's sigma_b formula assumes 2/M) and
    noise sigma_b = (2 z / M) sqrt(1/h): z_b = 2 z / (b_sensitivity_over_m sqrt(h)). Both read
    the same batch, so they are one Gaussian query with 1/z_eff^2 = 1/z_D^2 + 1/z_b^2; with the
    paper's 2/M and alpha3 = 1 this is exactly z.
    """
    check_positive("z", z)
    if not 0 < h < 1:
        raise DprecError(f"h must be in (0, 1), got {h}")
    check_positive("server learning rate", server_lr)
    check_positive("b sensitivity", b_sensitivity_over_m)
    z_d = z / (server_lr * math.sqrt(1.0 - h))
    z_b = 2.0 * z / (b_sensitivity_over_m * math.sqrt(h))
    return z_d, z_b, 1.0 / math.sqrt(z_d**-2 + z_b**-2)


def privrec_effective_noise(z: float = 1.0, h: float = 0.7,
                            b_sensitivity_over_m: float = 1.0) -> float:
    """z_eff of :func:`privrec_noise_multipliers` with alpha3 = 1 (the Table 3 setting)."""
    return privrec_noise_multipliers(z, h, 1.0, b_sensitivity_over_m)[2]


def privrec_table(paper_table: dict[int, tuple[float, float, float]] | None = None,
                  users: int = PRIVREC_USERS) -> list[dict[str, Any]]:
    """One row per (M, delta) of a DP-PrivRec eps table (default: Table 3, N = 4800; Table 4
    is Frappe's, N = 760), ``q = M / users``, z = 1, 1000 rounds: the paper's value, our
    reproduction of its accounting (1000 x M compositions, classic conversion), the correct
    RDP value (1000 steps without replacement, improved conversion) and the PLD value under
    Poisson sampling; ``adjacency`` names each figure's neighbouring relation
    (:data:`TABLE_ADJACENCY`)."""
    rows = []
    for batch, paper in (PRIVREC_PAPER_TABLE if paper_table is None else paper_table).items():
        q = batch / users
        for delta, value in zip(PRIVREC_DELTAS, paper, strict=True):
            rows.append({
                "M": batch,
                "q": q,
                "delta": delta,
                "paper": value,
                "reproduced": gaussian_rdp_epsilon(
                    1.0, q, PRIVREC_ROUNDS * batch, delta, Sampling.FIXED_SIZE,
                    dataset_size=users, conversion="classic"),
                "rdp_without_replacement": gaussian_rdp_epsilon(
                    1.0, q, PRIVREC_ROUNDS, delta, Sampling.FIXED_SIZE, dataset_size=users),
                "pld_poisson": pld_poisson_epsilon(1.0, q, PRIVREC_ROUNDS, delta),
                "adjacency": {k: TABLE_ADJACENCY[k].value for k in TABLE_COLUMNS},
            })
    return rows
