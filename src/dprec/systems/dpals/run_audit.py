"""dpals' noise for the audit of a finished run (``dprec audit skellam-run``;
:mod:`dprec.audit.runs`), tail or adaptive weighting: the DP count round's shares exactly as
the simulation draws them, :class:`~dprec.protocol.secure_sum.noise_shares.ShareNoise` from
:meth:`DpalsClients.round_noise <dprec.systems.dpals.clients.DpalsClients.round_noise>`,
summed over ``min_honest`` clients by its binomial tree (``range_sum``) and over the user's
``count_k`` coordinates. The run's eps composes every release, so this one release can only
show a gross error (its bound sits far below the whole run's eps)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.protocol.secure_sum.noise_shares import ShareNoise
from dprec.systems.audits import Noise
from dprec.systems.config_json import recorded_config
from dprec.systems.dpals.clients import DpalsClients
from dprec.systems.dpals.config import DpalsConfig
from dprec.systems.dpals.frequency import uses_counts
from dprec.systems.dpals.plan import run_plan

__all__ = ["run_noise"]

_SHARE_CELLS = 1 << 21
"""Share coordinates drawn per ShareNoise tree (bounds its buffers)."""


def run_noise(params: Mapping[str, Any], n_items: int, n_clients: int,
                 min_honest: int) -> tuple[Noise, int, dict[str, object]]:
    """``params``: a finished run's recorded config fields (its results file)."""
    cfg = replace(recorded_config(DpalsConfig, params), min_honest=min_honest)
    if not uses_counts(cfg):
        raise DprecError("dpals with weighting=uniform (and no head_items or reg_exponent) "
                         "has no k-hot count round; its releases (Gramians) are not audited "
                         "here")
    plan = run_plan(cfg, n_items, n_clients)
    counts = [rp for rp in plan.rounds if rp.kind == "counts"][0]
    clients = DpalsClients(sp.csr_matrix((n_clients, n_items)), np.arange(n_clients), cfg,
                           plan, 0, {})
    drawn = clients.round_noise(counts)[0]
    k = min(int(cfg.k if cfg.count_k is None else cfg.count_k), n_items)
    rows = max(1, _SHARE_CELLS // k)

    def noise(m: int, rng: np.random.Generator) -> np.ndarray:
        out = np.empty(m, dtype=np.int64)
        for start in range(0, m, rows):
            b = min(rows, m - start)
            tree = ShareNoise(drawn.mu_share, b * k, drawn.n, int(rng.integers(2 ** 63)),
                              drawn.release, drawn.round_id, drawn.shares)
            out[start:start + b] = tree.range_sum(0, min_honest).reshape(b, k).sum(axis=1)
        return out

    return noise, k, {"share_mu": drawn.mu_share, "release": drawn.release}
