"""Audit of a finished secure-sum run: the noise its clients actually draw against the eps
the run reports (issue 31 §5).

``dprec audit skellam`` takes its claim from the accountant that calibrated its noise, so a
calibration bug moves both sides and goes unseen. Here the claim is read from the run's own
privacy JSON (``privacy.true.epsilon`` at ``privacy.true.delta``, what the run says it
achieved), and the noise is rebuilt from the run's published description (its
``parameters``, the item count and the ``n_clients`` / ``min_honest`` of its threat-model
assumptions) by the clients' own code, with no accountant in between:

the system's own noise hook (``run_noise`` of its spec's
:class:`~dprec.systems.audits.SystemAudit`, each system's ``run_audit`` module in its own
folder) draws
what ``min_honest`` honest clients add on the audited user's ``k`` coordinates.

The pair is the user's k-hot vector (present) vs zeros (absent, zero-out adjacency: the
user's share stays in the sum); the score is the sum of the k coordinates
(:func:`~dprec.audit.mechanisms.skellam_sum_sampler`), the test chosen on calibration trials.
A lower bound above the reported eps fails the audit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dprec.audit.mechanisms import AuditSettings, run_two_input, skellam_sum_sampler
from dprec.audit.result import AuditResult
from dprec.errors import DprecError
from dprec.systems.audits import RunNoise

__all__ = ["audit_secure_sum_run", "load_run", "run_audited_systems"]


def _hooks() -> dict[str, RunNoise]:
    from dprec.systems.registry import SYSTEMS
    return {name: s.audit.run_noise for name, s in SYSTEMS.items()
            if s.audit is not None and s.audit.run_noise is not None}


def run_audited_systems() -> tuple[str, ...]:
    """The systems whose spec can rebuild a finished run's noise."""
    return tuple(_hooks())


def load_run(path: str | Path) -> dict[str, Any]:
    """The run document at ``path`` (``dprec run`` / ``dprec simulate --json`` output: one
    JSON object, or lines whose last one is it)."""
    p = Path(path)
    if not p.is_file():
        raise DprecError(f"no run JSON at {p}: pass --param run=PATH of a `dprec run` or "
                         "`dprec simulate --json` result")
    text = p.read_text().strip()
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        try:
            doc = json.loads(text.splitlines()[-1]) if text else None
        except json.JSONDecodeError:
            doc = None
    if not isinstance(doc, dict):
        raise DprecError(f"{p} is not a run's JSON document")
    return doc


def _field(doc: Mapping[str, Any], *path: str) -> Any:
    node: Any = doc
    for key in path:
        if not isinstance(node, Mapping) or key not in node or node[key] is None:
            raise DprecError(f"the run JSON has no {'.'.join(path)}: audit a secure-sum run "
                             f"({', '.join(run_audited_systems())}) saved by dprec "
                             "run/simulate")
        node = node[key]
    return node


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise DprecError(f"the run JSON's {name} must be an integer >= 1, got {value!r}")
    return value


def audit_secure_sum_run(doc: Mapping[str, Any], settings: AuditSettings) -> AuditResult:
    """Audit run ``doc`` (a run's JSON document; module docstring)."""
    system = _field(doc, "system")
    hooks = _hooks()
    if system not in hooks:
        raise DprecError(f"the run audit covers {', '.join(hooks)}, got {system!r}")
    params = _field(doc, "parameters")
    if params.get("aggregation", "secure") != "secure":
        raise DprecError("the run audit is for aggregation=secure (the clients' shares)")
    reported = float(_field(doc, "privacy", "true", "epsilon"))
    delta = float(_field(doc, "privacy", "true", "delta"))
    target = doc.get("privacy", {}).get("claimed", {}) or {}
    assumptions = _field(doc, "privacy", "threat_model_assumptions")
    n_clients = _positive_int(assumptions.get("n_clients"), "n_clients")
    min_honest = _positive_int(assumptions.get("min_honest"), "min_honest")
    n_items = _positive_int(_field(doc, "dataset", "items"), "dataset.items")
    noise, k, drawn = hooks[system](params, n_items, n_clients, min_honest)
    return run_two_input(
        f"{system}-run", "protocol", "user", skellam_sum_sampler(noise, k), settings,
        directions=("present", "absent"),
        direction_true={"present": reported, "absent": reported},
        claimed=reported, true=reported, delta=delta, tight=False,
        notes=(f"claimed: the eps the run reports (privacy.true, {reported:.6g} at delta "
               f"{delta:g}; target {target.get('epsilon')}); noise: {min_honest} honest "
               f"clients' shares Sk({float(drawn['share_mu']):.6g}) as the clients draw "
               f"them, on the user's {k} coordinates; true_epsilon repeats the reported eps "
               "(nothing is recomputed by the accountant)",),
        params={"system": system, "k": k, "min_honest": min_honest, "n_clients": n_clients,
                "n_items": n_items},
        extra={"drawn": drawn, "reported_epsilon": reported,
               "target_epsilon": target.get("epsilon")})
