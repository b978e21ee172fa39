"""Registry entry of dpals (issue 24 §1)."""

from __future__ import annotations

from typing import Any

from dprec.systems.audits import Noise, SystemAudit
from dprec.systems.base import Recommender
from dprec.systems.dpals.system import Dpals, DpalsConfig
from dprec.systems.spec import SystemSpec

__all__ = ["SPECS"]


def _dpals(name: str, cfg: Any) -> Recommender:
    return Dpals(name, cfg)


def _run_noise(params: Any, n_items: int, n_clients: int, min_honest: int
               ) -> tuple[Noise, int, dict[str, object]]:
    from dprec.systems.dpals.run_audit import run_noise
    return run_noise(params, n_items, n_clients, min_honest)


_DEPLOY = "dprec.systems.dpals"
"""This package runs as services (its deploy.py and serve.py)."""

SPECS: list[SystemSpec] = [
    SystemSpec("dpals", DpalsConfig, _dpals, "ranking", True,
               "DPALS / AdaDPALS: item factors from noisy sums of per-item sufficient "
               "statistics by a secure sum with distributed Skellam noise (issue 24)",
               paper={"delta": 8e-6, "k": 100, "factors": 64, "steps": None},
               audit=SystemAudit(run_noise=_run_noise), deploy=_DEPLOY),
]
"""The registry entries (listed in ``dprec.systems.registry.SPEC_MODULES``)."""
