"""dpals through the round engine, for either aggregation: the clients, the summing proxy
and the server as roles (:mod:`.clients`, :mod:`.proxy`, :mod:`.server`), so that the same
run goes in process, over the services (``transport``, aggregation=secure: the clients'
uploads are the cryptographic secure sum's) or in shards (a sharded backend: each shard sums
its clients' integer vectors, the partials are added). With ``aggregation=trusted`` the
clients add no noise shares and the server's curator adds each release's ``Sk(mu)``
(:class:`~dprec.protocol.secure_sum.curator.Curator`); the events come from the engine's log
either way.

Randomness: the clients' seed is drawn from the run's generator first, then the server's
start draws the initial item factors from it (and, trusted, the curator's own generator);
every later client draw is keyed by the seed and the client's id, so no transport or
sharding changes a number.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.iteration import IterationHook
from dprec.privacy.events import EventLog
from dprec.protocol.engine import Transport, run_protocol
from dprec.protocol.secure_sum.in_process import total_outcomes
from dprec.protocol.secure_sum.vdaf.contribution import ContributionCheck
from dprec.systems.dpals.client import contributions, solve_users
from dprec.systems.dpals.clients import DpalsClients
from dprec.systems.dpals.config import DpalsConfig
from dprec.systems.dpals.frequency import uses_counts
from dprec.systems.dpals.messages import DpalsModel
from dprec.systems.dpals.plan import RunPlan, items_bound, round_check, run_plan
from dprec.systems.dpals.proxy import ExactSumProxy
from dprec.systems.dpals.server import DpalsServer
from dprec.systems.reporting import check_shares

__all__ = ["EngineRun", "in_process_checks", "run_engine"]


@dataclass
class EngineRun:
    """What a run gives the system: the published item factors, the event log, the
    plan and what the clients measured."""

    factors: np.ndarray
    events: EventLog
    plan: RunPlan
    contributed_pairs: int
    clipped_fraction: list[float] = field(default_factory=list)
    median_user_norm: list[float] = field(default_factory=list)
    contributors: list[int] = field(default_factory=list)
    batches: list[int] = field(default_factory=list)
    share_mu: dict[str, float] = field(default_factory=dict)
    """Each release's per-client noise share as the clients draw it
    (:meth:`~.clients.DpalsClients.drawn_share_mu`; empty with a trusted curator)."""
    upload_outcomes: dict[str, int] = field(default_factory=dict)
    """How many uploads ended in each outcome, over all rounds (summed, refused, ...)."""
    refused_reasons: dict[str, int] = field(default_factory=dict)
    """The refused uploads by reason (``validity: range`` / ``l2``), over all rounds."""


def run_engine(cfg: DpalsConfig, train: sp.csr_matrix, rng: np.random.Generator,
               seed: int, transport: Transport | None, on_step: IterationHook | None = None,
               model: Any = None) -> EngineRun:
    """Run dpals (config fields ``cfg``, client seed ``seed``) through the engine; the
    hook ``on_step(step, model)`` after every ALS round, with ``model`` holding the new
    factors in ``_V``."""
    n, d = train.shape
    if cfg.n_clients is not None and int(cfg.n_clients) != n:
        raise DprecError(f"n_clients = {cfg.n_clients}, but the training data has {n} "
                         "users: drop n_clients or match it")
    plan = run_plan(cfg, d, n)
    secure = cfg.aggregation == "secure"
    server = DpalsServer(plan, int(cfg.factors), float(cfg.reg),
                         float(cfg.unobserved_weight), float(cfg.clip),
                         float(cfg.rhs_weight), float(cfg.init_scale),
                         trusted=not secure)
    clients_hook = getattr(model, "clients_hook", None)
    proxy = ExactSumProxy(server.min_honest,
                          in_process_checks(cfg, plan, clients_hook) if secure else None)
    events = {r.name: r.event(plan.multiplier) for r in plan.releases}
    clients = DpalsClients(train, np.arange(n), cfg, plan, seed, events,
                           lambda: proxy.public_key,
                           devices=bool(getattr(transport, "device_clients", False)))
    share_mu = clients.drawn_share_mu() if secure else {}
    for r in plan.releases if secure else ():
        check_shares(r.name, r.mu(plan.multiplier), share_mu[r.name], plan.min_honest)
    log = EventLog(n)
    before: dict[int, np.ndarray] = {}
    current: list[np.ndarray | None] = [None]
    contributors: list[int] = []
    steps = 0

    def hook(r: int, broadcast: Any) -> None:
        nonlocal steps
        assert isinstance(broadcast, DpalsModel)
        rp = plan.round(r)
        contributors.append(int(broadcast.contributors))
        if rp.kind == "init":
            current[0] = broadcast.factors_matrix
        if rp.kind != "step":
            return
        start = current[0] if current[0] is not None else server.initial_factors
        if start is not None:
            before[rp.round_id] = start
        current[0] = broadcast.factors_matrix
        if model is not None:
            model._V = broadcast.factors_matrix
        if on_step is not None:
            on_step(steps, model)
        steps += 1

    sim = clients_hook(clients, n) if clients_hook is not None else clients
    run = run_protocol(server, sim, len(plan.rounds), rng, log, proxy, transport, hook)
    if len(run.rounds) != len(plan.rounds) or not all(r.updated for r in run.rounds):
        raise DprecError(f"a round released nothing: fewer than min_honest = "
                         f"{server.min_honest} clients contributed")
    final = run.broadcast
    assert isinstance(final, DpalsModel)
    lengths = _lengths(clients, plan, before, train, cfg)
    c = float(cfg.clip)
    return EngineRun(final.factors_matrix, log, plan,
                     int(clients.weights.nnz) if clients.weights is not None else _pairs(
                         cfg, train, seed, final, plan),
                     [float(np.mean(x > c)) for x in lengths],
                     [float(np.median(x)) for x in lengths], contributors,
                     [len(proxy.batches)], share_mu, total_outcomes(proxy.outcomes),
                     dict(proxy.refused_reasons))


def in_process_checks(cfg: DpalsConfig, plan: RunPlan, clients_hook: Any
                      ) -> list[ContributionCheck] | None:
    """The checks the in-process proxy applies (``validity=prio3``, the default): each
    round's :func:`~.plan.round_check`, evaluated on every client's plaintext vector, when
    the run simulates malicious clients (``clients_hook``, e.g.
    :func:`dprec.protocol.sum_poisoning.poison_sum`); None otherwise. Every simulated client
    is then the honest code, whose vectors fail the check with probability at most
    ``n (eta + eta_2) <= 2^-40 + n 2^-50`` over the round (its untruncated share is, within
    that total variation, the truncated one a device proves; the report adds the cost to
    ``delta_total``), so the round sums the block totals without building each client's
    vector (per fit at 1,000 x 1,682: 0.6 s unchecked at load 3, 212 s checked at load 15).
    Over the services every upload is proved (:meth:`~.deploy.DpalsDeployment.round_check`)."""
    if cfg.validity != "prio3" or clients_hook is None:
        return None
    return [round_check(plan, rp) for rp in plan.rounds]


def _lengths(clients: DpalsClients, plan: RunPlan, before: dict[int, np.ndarray],
             train: sp.csr_matrix, cfg: DpalsConfig) -> list[np.ndarray]:
    """Each ALS round's unclipped user norms: measured by the clients where they ran in this
    process, else solved again from the factors that round started from (a sharded run)."""
    out = []
    for rp in plan.rounds:
        if rp.kind != "step":
            continue
        if rp.round_id in clients.lengths:
            out.append(clients.lengths[rp.round_id])
        else:
            U = solve_users(before[rp.round_id], train, float(cfg.reg),
                            float(cfg.unobserved_weight))
            out.append(np.linalg.norm(U, axis=1))
    return out


def _pairs(cfg: DpalsConfig, train: sp.csr_matrix, seed: int, final: DpalsModel,
           plan: RunPlan) -> int:
    """The (user, item) pairs the clients contributed to (a sharded run's clients selected
    them in their shards): the same selection, made again."""
    counts = final.counts.astype(np.float64) if uses_counts(cfg) else None
    return int(contributions(train, cfg, seed, counts, items_bound(cfg)).nnz)
