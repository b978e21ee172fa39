"""Registry entries of FCF and FMF-LDP (federated implicit MF; docs/architecture.md §2)."""

from __future__ import annotations

from dprec.systems.fmf.system import FederatedMF, FMFConfig
from dprec.systems.spec import SystemSpec

__all__ = ["SPECS"]


def _build(name: str, cfg: FMFConfig) -> FederatedMF:
    return FederatedMF(name, cfg)


_DEPLOY = "dprec.systems.fmf"
"""This package runs as services (its deploy.py and serve.py)."""

SPECS: list[SystemSpec] = [
    SystemSpec("fcf", FMFConfig, _build, "ranking", False,
               "federated implicit MF, exact item gradients (non-private)",
               {"exact": True}, {"lr": (0.03, 0.1, 0.3, 1.0), "factors": (10, 20, 40, 80)},
               deploy=_DEPLOY),
    SystemSpec("fmf-ldp", FMFConfig, _build, "ranking", True,
               "FMF-LDP: k LDP gradient reports per client per epoch via a shuffler",
               {"exact": False}, deploy=_DEPLOY),
]
"""fcf and fmf-ldp."""
