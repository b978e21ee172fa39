"""Registry entries of DPLCF and its item-CF reference points (Gao et al., SIGIR 2020)."""

from __future__ import annotations

from dprec.systems.audits import AuditRequest, AuditSubject, BitVector, LocalValue, SystemAudit
from dprec.systems.dplcf.system import LocalItemCF, LocalItemCFConfig
from dprec.systems.spec import SystemSpec

__all__ = ["SPECS"]


def _build(name: str, cfg: LocalItemCFConfig) -> LocalItemCF:
    return LocalItemCF(name, cfg)


def _audit(request: AuditRequest) -> AuditSubject:
    """Event level: one flipped bit; user level: the whole N-bit vector (``n_items``,
    default ML-100K's 1682)."""
    cfg = request.config()
    if request.level == "user":
        return BitVector(cfg.mechanism(), request.integer("n_items", 1682))
    return LocalValue(cfg.mechanism(), cfg.epsilon, request.name)


_AUDIT = SystemAudit(_audit, settings=("n_items",))
"""The bit-flip systems' audit hook (:mod:`dprec.systems.audits`)."""

_GRID = {"neighbours": (10, 20, 50, 100)}

_DEPLOY = "dprec.systems.dplcf"
"""This package runs as services (its deploy.py and serve.py)."""

SPECS: list[SystemSpec] = [
    SystemSpec("lcf-ub", LocalItemCFConfig, _build, "ranking", False,
               "item-CF, Jaccard on the true data (non-private upper bound)",
               {"flip": "none", "estimator": "naive"}, _GRID, deploy=_DEPLOY),
    SystemSpec("lcf-sp", LocalItemCFConfig, _build, "ranking", True,
               "Jaccard straight on symmetrically flipped bits",
               {"flip": "symmetric", "estimator": "naive"}, audit=_AUDIT, deploy=_DEPLOY),
    SystemSpec("lcf-ap", LocalItemCFConfig, _build, "ranking", True,
               "Jaccard straight on asymmetrically flipped bits (one-sided)",
               {"flip": "asymmetric", "estimator": "naive"}, audit=_AUDIT, deploy=_DEPLOY),
    SystemSpec("dplcf-sp", LocalItemCFConfig, _build, "ranking", True,
               "DPLCF (Gao et al., SIGIR 2020): symmetric flips, n = A^-1 m",
               {"flip": "symmetric", "estimator": "unbiased"}, audit=_AUDIT, deploy=_DEPLOY),
    SystemSpec("dplcf-ap", LocalItemCFConfig, _build, "ranking", True,
               "DPLCF, asymmetric flips (presence only)",
               {"flip": "asymmetric", "estimator": "unbiased"}, audit=_AUDIT, deploy=_DEPLOY),
    SystemSpec("dplcf-oue", LocalItemCFConfig, _build, "ranking", True,
               "DPLCF's estimator with optimised unary encoding",
               {"flip": "oue", "estimator": "unbiased"}, audit=_AUDIT, deploy=_DEPLOY),
    SystemSpec("dplcf-eb", LocalItemCFConfig, _build, "ranking", True,
               "symmetric flips + empirical-Bayes shrinkage of the counts (ours)",
               {"flip": "symmetric", "estimator": "eb"}, audit=_AUDIT, deploy=_DEPLOY),
]
"""lcf-ub, lcf-sp, lcf-ap and the four DPLCF variants (bpr-mf and gmf, its centrally trained
baselines, are :mod:`dprec.systems.central`'s)."""
