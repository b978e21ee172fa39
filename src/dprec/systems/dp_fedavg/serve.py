"""dp-fedavg, the server half: the :class:`FedAvgServer` role built from the public
description, as ``DpFedAvg.fit`` builds it, and what a sharded run needs of it (its clients'
integer vectors are summed exactly in the shards: ``IntegerSumAdapter``)
(:mod:`dprec.protocol.deployment`)."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import numpy as np

from dprec.protocol.aggregation import Aggregator
from dprec.protocol.deployment import Serving
from dprec.protocol.messages import ItemMatrix64
from dprec.systems.dp_fedavg.accounting import calibrate_mu, choose_gamma
from dprec.systems.dp_fedavg.server import FedAvgServer
from dprec.systems.dp_fedavg.system import DpFedAvgConfig

__all__ = ["SERVING", "FedAvgServing", "server_of"]


def server_of(config: dict[str, Any], n_items: int, n_clients: int) -> FedAvgServer:
    """The server role of ``config`` (dp-fedavg's fields) for ``n_clients`` enrolled."""
    c = DpFedAvgConfig(**{f.name: config[f.name] for f in fields(DpFedAvgConfig)
                          if f.name in config})
    dim = n_items * c.factors
    gamma = c.gamma if c.gamma is not None else choose_gamma(dim, c.clip)
    mu = calibrate_mu(c.epsilon, c.delta, c.rounds, dim, c.clip, gamma, c.rate)
    return FedAvgServer(n_items, c.factors, c.lr, c.reg, c.server_steps, c.init_scale, gamma,
                        c.rate * n_clients, None if c.aggregation == "secure" else mu)


class FedAvgServing(Serving):
    """The server half of dp-fedavg."""

    role_type = FedAvgServer
    shard_adapter = "IntegerSumAdapter"
    """A sharded run sums the clients' noisy vectors exactly (what the secure sum yields)."""

    def server_role(self, info: Any, aggregator: Aggregator) -> FedAvgServer:
        return server_of(info.config, info.n_items, int(info.config["n_clients"]))

    def role_memory(self, info: Any) -> tuple[int, int, str]:
        """V, N x F float64; a round holds V, the int64 sum, the mean and the new V."""
        n, f = info.n_items, int(info.config["factors"])
        state = 8 * n * f
        return state, 4 * state, f"V ({n:,} x {f:,} float64)"

    def encode_broadcast(self, info: Any, broadcast: Any, version: int) -> bytes:
        return ItemMatrix64(np.asarray(broadcast, np.float64), version).to_bytes()

    def decode_broadcast(self, info: Any, body: bytes) -> np.ndarray:
        return ItemMatrix64.from_bytes(body).matrix.astype(np.float64)


SERVING = FedAvgServing()
