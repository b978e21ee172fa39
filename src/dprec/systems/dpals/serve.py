"""dpals as services, the server half: the :class:`DpalsServer` role built from the public
description, its broadcast (:class:`DpalsModel`: the server's public key, the item factors,
the DP counts) and the state its store keeps (:class:`DpalsState`: the model and the
server's private key, so a restarted server opens shares sealed to its published key and
solves from the factors it published; only the model is ever published)
(:mod:`dprec.protocol.deployment`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from dprec.protocol.aggregation import Aggregator
from dprec.protocol.secure_sum.serving import SecureSumServing
from dprec.protocol.secure_sum.vdaf.contribution import ContributionCheck
from dprec.systems.dpals.config import DpalsConfig
from dprec.systems.dpals.deploy import DEPLOYMENT
from dprec.systems.dpals.messages import DpalsModel, DpalsState
from dprec.systems.dpals.plan import plan_of
from dprec.systems.dpals.server import DpalsServer

__all__ = ["SERVING", "DpalsServing", "server_of"]


def server_of(config: DpalsConfig, n_items: int, n_clients: int,
              checks: Sequence[ContributionCheck] | None = None) -> DpalsServer:
    """The server role of ``config`` (dpals' fields) as ``Dpals.fit`` builds it; ``checks``:
    each round's Prio3 check (``validity=prio3`` over the services)."""
    c = config
    plan = plan_of(replace(c, n_clients=int(n_clients)), n_items)
    return DpalsServer(plan, int(c.factors), float(c.reg), float(c.unobserved_weight),
                       float(c.clip), float(c.rhs_weight), float(c.init_scale),
                       checks)


class DpalsServing(SecureSumServing):
    """The server half of dpals (aggregation=secure)."""

    role_type = DpalsServer
    model_type = DpalsModel
    state_type = DpalsState

    def server_role(self, info: Any, aggregator: Aggregator) -> DpalsServer:
        return server_of(info.config, info.n_items, int(info.config.n_clients),
                         DEPLOYMENT.checks(info.config, info.n_items))

    def role_memory(self, info: Any) -> tuple[int, int, str]:
        """The item factors and counts; a round also holds the release (one share per
        client) and the per-item Gramians."""
        plan = plan_of(info.config, info.n_items)
        f = int(info.config.factors)
        state = 8 * info.n_items * (f + 1)
        p = max((r.params for r in plan.rounds), key=lambda p: p.share_bytes)
        peak = state + plan.n_clients * (p.share_bytes + 128) * 2 + 8 * 3 * p.dimension
        return state, peak, f"the item factors of {info.n_items:,} items x {f}"


SERVING = DpalsServing()
