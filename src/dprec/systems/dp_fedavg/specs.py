"""Registry entry of dp-fedavg (issue 24 §2)."""

from __future__ import annotations

from typing import Any

from dprec.systems.base import Recommender
from dprec.systems.dp_fedavg.system import DpFedAvg, DpFedAvgConfig
from dprec.systems.spec import SystemSpec

__all__ = ["SPECS"]


def _dp_fedavg(name: str, cfg: Any) -> Recommender:
    return DpFedAvg(name, cfg)


_DEPLOY = "dprec.systems.dp_fedavg"
"""This package runs as services (its deploy.py and serve.py)."""

SPECS: list[SystemSpec] = [
    SystemSpec("dp-fedavg", DpFedAvgConfig, _dp_fedavg, "ranking", True,
               "user-level DP-FedAvg on FCF: clipped item gradients through a secure sum "
               "with Skellam shares, Poisson client sampling (issue 24)",
               default_grid={"lr": (0.03, 0.1, 0.3), "clip": (0.3, 1.0, 3.0),
                             "rate": (0.3, 1.0)}, deploy=_DEPLOY),
]
"""The registry entries (listed in ``dprec.systems.registry.SPEC_MODULES``)."""
