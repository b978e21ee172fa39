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

_VARIANTS = (  # name, flip, estimator, description; lcf-ub alone is not private
    ("lcf-ub", "none", "naive", "item-CF, Jaccard on the true data (non-private upper bound)"),
    ("lcf-sp", "symmetric", "naive", "Jaccard straight on symmetrically flipped bits"),
    ("lcf-ap", "asymmetric", "naive",
     "Jaccard straight on asymmetrically flipped bits (one-sided)"),
    ("dplcf-sp", "symmetric", "unbiased",
     "DPLCF (Gao et al., SIGIR 2020): symmetric flips, n = A^-1 m"),
    ("dplcf-ap", "asymmetric", "unbiased", "DPLCF, asymmetric flips (presence only)"),
    ("dplcf-oue", "oue", "unbiased", "DPLCF's estimator with optimised unary encoding"),
    ("dplcf-eb", "symmetric", "eb",
     "symmetric flips + empirical-Bayes shrinkage of the counts (ours)"),
)

SPECS: list[SystemSpec] = [
    SystemSpec(name, LocalItemCFConfig, _build, "ranking", flip != "none", text,
               {"flip": flip, "estimator": estimator}, _GRID if flip == "none" else {},
               audit=None if flip == "none" else _AUDIT, deploy=_DEPLOY)
    for name, flip, estimator, text in _VARIANTS
]
"""lcf-ub, lcf-sp, lcf-ap and the four DPLCF variants (bpr-mf and gmf, its centrally trained
baselines, are :mod:`dprec.systems.central`'s)."""
