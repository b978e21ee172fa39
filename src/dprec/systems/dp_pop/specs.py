"""Registry entries of dp-pop and ldp-pop (issue 23 §3)."""

from __future__ import annotations

from typing import Any

from dprec.systems.base import Recommender
from dprec.systems.dp_pop.system import DpPop, DpPopConfig, LdpPop, LdpPopConfig
from dprec.systems.spec import SystemSpec

__all__ = ["SPECS"]


def _dp_pop(name: str, cfg: Any) -> Recommender:
    return DpPop(name, cfg)


def _ldp_pop(name: str, cfg: Any) -> Recommender:
    return LdpPop(name, cfg)


_DEPLOY = "dprec.systems.dp_pop"
"""This package runs as services (its deploy.py and serve.py)."""

SPECS: list[SystemSpec] = [
    SystemSpec("dp-pop", DpPopConfig, _dp_pop, "ranking", True,
               "item popularity from k-hot vectors by a secure sum with distributed Skellam "
               "noise (user-level central DP without a trusted server; issue 23)", deploy=_DEPLOY),
    SystemSpec("ldp-pop", LdpPopConfig, _ldp_pop, "ranking", True,
               "item popularity from one padding-and-sampling OUE report per user (local DP)"),
]
"""The registry entries (listed in ``dprec.systems.registry.SPEC_MODULES``)."""
