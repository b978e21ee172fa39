"""Registry entries of FCF and FMF-LDP (federated implicit MF; docs/architecture.md §2)."""

from __future__ import annotations

from dprec.errors import DprecError
from dprec.mechanisms.numeric import BinaryMechanism
from dprec.systems.audits import AuditRequest, AuditSubject, ShuffledSlot, SystemAudit
from dprec.systems.fmf.system import FederatedMF, FMFConfig
from dprec.systems.spec import SystemSpec

__all__ = ["SPECS"]


def _build(name: str, cfg: FMFConfig) -> FederatedMF:
    return FederatedMF(name, cfg)


def _audit(request: AuditRequest) -> AuditSubject:
    """One shuffled report slot of ``n_users`` (default 943) binary reports."""
    request.only_at("event", "is audited per report slot; its user level composes k x "
                             "epochs shuffles and is not audited")
    cfg = request.config()
    if cfg.mechanism != "binary":
        raise DprecError("the shuffled-slot audit counts +1 reports: it needs "
                         "mechanism=binary")
    return ShuffledSlot(BinaryMechanism(cfg.epsilon), request.integer("n_users", 943),
                        cfg.delta)


_DEPLOY = "dprec.systems.fmf"
"""This package runs as services (its deploy.py and serve.py)."""

SPECS: list[SystemSpec] = [
    SystemSpec("fcf", FMFConfig, _build, "ranking", False,
               "federated implicit MF, exact item gradients (non-private)",
               {"exact": True}, {"lr": (0.03, 0.1, 0.3, 1.0), "factors": (10, 20, 40, 80)},
               deploy=_DEPLOY),
    SystemSpec("fmf-ldp", FMFConfig, _build, "ranking", True,
               "FMF-LDP: k LDP gradient reports per client per epoch via a shuffler",
               {"exact": False}, audit=SystemAudit(_audit, settings=("n_users",)), deploy=_DEPLOY),
]
"""fcf and fmf-ldp."""
