"""Audit of a finished secure-sum run: the noise its clients actually draw against the eps
the run reports (issue 31 §5).

``dprec audit skellam`` takes its claim from the accountant that calibrated its noise, so a
calibration bug moves both sides and goes unseen. Here the claim is read from the run's own
privacy JSON (``privacy.true.epsilon`` at ``privacy.true.delta``, what the run says it
achieved), and the noise is rebuilt from the run's published description (its
``parameters``, the item count and the ``n_clients`` / ``min_honest`` of its threat-model
assumptions) by the clients' own code, with no accountant in between:

- dp-pop: the per-client share :func:`dprec.systems.dp_pop.calibration.calibrate` hands the
  clients (``PopClients`` add ``share.noise``); ``min_honest`` honest shares on the audited
  user's ``k`` coordinates, summed, are ``Sk(min_honest k share_mu)`` (Poisson parts add),
  drawn by the same :class:`~dprec.mechanisms.skellam.SkellamMechanism`.
- dpals (tail or adaptive weighting): the DP count round's shares exactly as the simulation
  draws them, :class:`~dprec.protocol.secure_sum.noise_shares.ShareNoise` from
  :meth:`DpalsClients.round_noise <dprec.systems.dpals.clients.DpalsClients.round_noise>`,
  summed over ``min_honest`` clients by its binomial tree (``range_sum``) and over the
  user's ``count_k`` coordinates. The run's eps composes every release, so this one release
  can only show a gross error (its bound sits far below the whole run's eps).

The pair is the user's k-hot vector (present) vs zeros (absent, zero-out adjacency: the
user's share stays in the sum); the score is the sum of the k coordinates
(:func:`~dprec.audit.mechanisms.skellam_sum_sampler`), the test chosen on calibration trials.
A lower bound above the reported eps fails the audit.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from dprec.audit.mechanisms import AuditSettings, run_two_input, skellam_sum_sampler
from dprec.audit.result import AuditResult
from dprec.errors import DprecError
from dprec.mechanisms.skellam import SkellamMechanism
from dprec.protocol.secure_sum.noise_shares import ShareNoise

__all__ = ["AUDITED_SYSTEMS", "audit_secure_sum_run", "load_run"]

AUDITED_SYSTEMS = ("dp-pop", "dpals")

_SHARE_CELLS = 1 << 21
"""Share coordinates drawn per ShareNoise tree (bounds its buffers)."""

Noise = Callable[[int, np.random.Generator], np.ndarray]


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
                             f"({', '.join(AUDITED_SYSTEMS)}) saved by dprec run/simulate")
        node = node[key]
    return node


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise DprecError(f"the run JSON's {name} must be an integer >= 1, got {value!r}")
    return value


def _dp_pop_noise(params: Mapping[str, Any], n_items: int, n_clients: int,
                  min_honest: int) -> tuple[Noise, int, dict[str, object]]:
    from dprec.systems.dp_pop.calibration import calibrate

    cal = calibrate({**params, "min_honest": min_honest}, n_items, n_clients)
    k = int(cal.l1)
    summed = SkellamMechanism(cal.share.mu * min_honest * k)
    return (lambda m, rng: summed.noise(m, rng)), k, {"share_mu": cal.share.mu}


def _dpals_noise(params: Mapping[str, Any], n_items: int, n_clients: int,
                 min_honest: int) -> tuple[Noise, int, dict[str, object]]:
    from dprec.systems.dpals.clients import DpalsClients
    from dprec.systems.dpals.plan import run_plan

    cfg = {**params, "min_honest": min_honest}
    if cfg.get("weighting") == "uniform":
        raise DprecError("dpals with weighting=uniform has no k-hot count round; its "
                         "releases (Gramians) are not audited here")
    plan = run_plan(cfg, n_items, n_clients)
    counts = [rp for rp in plan.rounds if rp.kind == "counts"][0]
    clients = DpalsClients(sp.csr_matrix((n_clients, n_items)), np.arange(n_clients), cfg,
                           plan, 0, {})
    drawn = clients.round_noise(counts)[0]
    k = min(int(cfg["k"] if cfg.get("count_k") is None else cfg["count_k"]), n_items)
    rows = max(1, _SHARE_CELLS // k)

    def noise(m: int, rng: np.random.Generator) -> np.ndarray:
        out = np.empty(m, dtype=np.int64)
        for start in range(0, m, rows):
            b = min(rows, m - start)
            tree = ShareNoise(drawn.mu_share, b * k, drawn.n, int(rng.integers(2 ** 63)),
                              drawn.release, drawn.round_id, drawn.shares)
            out[start:start + b] = tree.range_sum(0, min_honest).reshape(b, k).sum(axis=1)
        return out

    return noise, k, {"share_mu": drawn.mu_share, "release": drawn.release}


def audit_secure_sum_run(doc: Mapping[str, Any], settings: AuditSettings) -> AuditResult:
    """Audit run ``doc`` (a run's JSON document; module docstring)."""
    system = _field(doc, "system")
    if system not in AUDITED_SYSTEMS:
        raise DprecError(f"the run audit covers {', '.join(AUDITED_SYSTEMS)}, got {system!r}")
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
    build = _dp_pop_noise if system == "dp-pop" else _dpals_noise
    noise, k, drawn = build(params, n_items, n_clients, min_honest)
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
