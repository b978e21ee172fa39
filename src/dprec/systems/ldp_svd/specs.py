"""Registry entries of the local-DP rating systems (seed 001; docs/architecture.md §3)."""

from __future__ import annotations

from typing import Any

from dprec.systems.audits import AuditRequest, AuditSubject, LocalValue, SystemAudit
from dprec.systems.base import Recommender
from dprec.systems.ldp_svd.system import LaplaceRRSVDConfig, LDPSVDConfig
from dprec.systems.spec import SystemSpec

__all__ = ["PAPER", "SPECS"]


def _build(name: str, cfg: Any) -> Recommender:
    from dprec.systems.ldp_svd.system import LocalRatingSVD
    return LocalRatingSVD(name, cfg)


def _audit(request: AuditRequest) -> AuditSubject:
    """One rating's report through the per-rating mechanism."""
    request.only_at("event", "is audited per rating")
    return LocalValue(request.config().build_mechanism())


_AUDIT = SystemAudit(_audit)
"""The rating systems' audit hook (:mod:`dprec.systems.audits`)."""

PAPER = {"noise_weighting": False, "biases": False}
"""The paper trains plain Funk SVD on the reports: r_hat = U_u . I_i (its Eq. 6, no global
mean or biases) with loss Eq. 9, and no weighting by the noise variance."""

_DEPLOY = "dprec.systems.ldp_svd"
"""This package runs as services (its deploy.py and serve.py)."""

SPECS: list[SystemSpec] = [
    SystemSpec("laplace-svd", LDPSVDConfig, _build, "rating", True,
               "Laplace-SVD (seed 001 baseline): x + Lap(1/eps) per rating, Funk SVD on the "
               "server", {"mechanism": "laplace"}, paper=PAPER, audit=_AUDIT, deploy=_DEPLOY),
    SystemSpec("laplace-rr-svd", LaplaceRRSVDConfig, _build, "rating", True,
               "Laplace-RR-SVD as published: true rating w.p. e^eps2/(1+e^eps2), else "
               "Laplace(eps1); claimed eps1+eps2, true guarantee none", paper=PAPER, audit=_AUDIT,
               deploy=_DEPLOY),
    SystemSpec("ldp-svd", LDPSVDConfig, _build, "rating", True,
               "eps-LDP per rating (laplace, duchi or piecewise), Funk SVD on the server; "
               "hide_items adds fake reports on unrated items", paper=PAPER, audit=_AUDIT,
               deploy=_DEPLOY),
]
"""laplace-svd, laplace-rr-svd and ldp-svd (nondp-svd is registered with the rating models)."""
