"""Registry entries of dp-pop and ldp-pop (issue 23 §3)."""

from __future__ import annotations

from typing import Any

from dprec.systems.audits import Noise, SystemAudit
from dprec.systems.base import Recommender
from dprec.systems.dp_pop.system import DpPop, DpPopConfig, LdpPop, LdpPopConfig
from dprec.systems.spec import SystemSpec

__all__ = ["SPECS"]


def _dp_pop(name: str, cfg: Any) -> Recommender:
    return DpPop(name, cfg)


def _ldp_pop(name: str, cfg: Any) -> Recommender:
    return LdpPop(name, cfg)


def _run_noise(params: Any, n_items: int, n_clients: int, min_honest: int
               ) -> tuple[Noise, int, dict[str, object]]:
    from dprec.systems.dp_pop.run_audit import run_noise
    return run_noise(params, n_items, n_clients, min_honest)


_DEPLOY = "dprec.systems.dp_pop"
"""This package runs as services (its deploy.py and serve.py)."""

SPECS: list[SystemSpec] = [
    SystemSpec("dp-pop", DpPopConfig, _dp_pop, "ranking", True,
               "item popularity from k-hot vectors by a secure sum with distributed Skellam "
               "noise (user-level central DP without a trusted server; issue 23)",
               audit=SystemAudit(run_noise=_run_noise), deploy=_DEPLOY),
    SystemSpec("ldp-pop", LdpPopConfig, _ldp_pop, "ranking", True,
               "item popularity from one padding-and-sampling OUE report per user (local DP)"),
]
"""The registry entries (listed in ``dprec.systems.registry.SPEC_MODULES``)."""
