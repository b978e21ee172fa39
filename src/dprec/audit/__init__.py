"""Empirical privacy auditing: statistically valid lower bounds on epsilon.

Two-input audits of the mechanisms and protocols (LDP-Auditor, Arcolezi and Gambs, PETS 2024;
Jagielski et al., NeurIPS 2020) and a one-run canary audit of a federated training run
(Steinke, Nasr, Jagielski, NeurIPS 2023). A system is audited through the hook on its spec
(:mod:`dprec.systems.audits`). A lower bound above the accountant's eps is a bug in the mechanism
or the accountant; far below it, it shows how tight the analysis is (or how weak the test).
"""

from dprec.audit.api import TARGETS, audit, auditable_systems, targets
from dprec.audit.bounds import (
    audit_ceiling,
    clopper_pearson,
    empirical_epsilon,
    eps_lower_one_run,
    p_value_one_run,
)
from dprec.audit.mechanisms import AuditSettings
from dprec.audit.result import AuditResult

__all__ = [
    "TARGETS",
    "AuditResult",
    "AuditSettings",
    "audit",
    "audit_ceiling",
    "auditable_systems",
    "clopper_pearson",
    "empirical_epsilon",
    "eps_lower_one_run",
    "p_value_one_run",
    "targets",
]
