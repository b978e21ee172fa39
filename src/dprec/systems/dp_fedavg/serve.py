"""dp-fedavg, the server half: the :class:`FedAvgServer` role built from the public
description, as ``DpFedAvg.fit`` builds it; its broadcast (:class:`FedAvgModel`: the server's
public key and the item factors) and the state its store keeps (:class:`FedAvgState`: the
model and the server's private key, so a restarted server opens shares sealed to its
published key; only the model is ever published); and what a sharded run needs of it (its
clients' integer vectors are summed exactly in the shards: ``IntegerSumAdapter``)
(:mod:`dprec.protocol.deployment`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from dprec.protocol.aggregation import Aggregator
from dprec.protocol.secure_sum.serving import SecureSumServing
from dprec.systems.dp_fedavg.config import DpFedAvgConfig
from dprec.systems.dp_fedavg.deploy import DEPLOYMENT
from dprec.systems.dp_fedavg.messages import FedAvgModel, FedAvgState
from dprec.systems.dp_fedavg.plan import plan_of
from dprec.systems.dp_fedavg.server import FedAvgServer

__all__ = ["SERVING", "FedAvgServing", "server_of"]


def server_of(config: DpFedAvgConfig, n_items: int, n_clients: int) -> FedAvgServer:
    """The server role of ``config`` (dp-fedavg's fields) for ``n_clients`` enrolled."""
    c = config
    plan = plan_of(config, n_items, n_clients)
    secure = c.aggregation == "secure"
    checks = DEPLOYMENT.checks(replace(config, n_clients=n_clients), n_items) if secure \
        else None
    return FedAvgServer(n_items, c.factors, c.lr, c.reg, c.server_steps, c.init_scale,
                        plan.gamma, c.rate * n_clients, None if secure else plan.mu,
                        plan.params, plan.min_honest or 1, n_clients,
                        None if checks is None else checks[0])


class FedAvgServing(SecureSumServing):
    """The server half of dp-fedavg."""

    role_type = FedAvgServer
    model_type = FedAvgModel
    state_type = FedAvgState
    diagnosed = ("contributors",)

    def server_role(self, info: Any, aggregator: Aggregator) -> FedAvgServer:
        return server_of(info.config, info.n_items, int(info.config.n_clients))

    def role_memory(self, info: Any) -> tuple[int, int, str]:
        """V, N x F float64; a round holds V, the int64 sum, the mean and the new V, and the
        release (one share per client)."""
        n, f = info.n_items, int(info.config.factors)
        state = 8 * n * f
        plan = plan_of(info.config, n, int(info.config.n_clients))
        release = 0 if plan.params is None else \
            plan.n_clients * (plan.params.share_bytes + 128) * 2
        return state, 4 * state + release, f"V ({n:,} x {f:,} float64)"


SERVING = FedAvgServing()
