"""dpals as services, the server half: the :class:`DpalsServer` role built from the public
description, its broadcast (:class:`DpalsModel`: the server's public key, the item factors,
the DP counts) and the state its store keeps (:class:`DpalsState`: the model and the
server's private key, so a restarted server opens shares sealed to its published key and
solves from the factors it published; only the model is ever published)
(:mod:`dprec.protocol.deployment`)."""

from __future__ import annotations

from typing import Any

from dprec.protocol.aggregation import Aggregator
from dprec.protocol.deployment import Serving
from dprec.protocol.sharding import IntegerSumAdapter
from dprec.systems.dpals.messages import DpalsModel, DpalsState
from dprec.systems.dpals.plan import plan_of
from dprec.systems.dpals.server import DpalsServer

__all__ = ["SERVING", "DpalsServing", "server_of"]


def server_of(config: dict[str, Any], n_items: int, n_clients: int) -> DpalsServer:
    """The server role of ``config`` (dpals' fields) as ``Dpals.fit`` builds it."""
    c = config
    plan = plan_of({**c, "n_clients": int(n_clients)}, n_items)
    return DpalsServer(plan, int(c["factors"]), float(c["reg"]), float(c["unobserved_weight"]),
                       float(c["clip"]), float(c["rhs_weight"]), float(c["init_scale"]))


class DpalsServing(Serving):
    """The server half of dpals (aggregation=secure)."""

    role_type = DpalsServer
    shard_adapter = IntegerSumAdapter

    def server_role(self, info: Any, aggregator: Aggregator) -> DpalsServer:
        return server_of(info.config, info.n_items, int(info.config["n_clients"]))

    def role_memory(self, info: Any) -> tuple[int, int, str]:
        """The item factors and counts; a round also holds the release (one share per
        client) and the per-item Gramians."""
        plan = plan_of(info.config, info.n_items)
        f = int(info.config["factors"])
        state = 8 * info.n_items * (f + 1)
        p = max((r.params for r in plan.rounds), key=lambda p: p.share_bytes)
        peak = state + plan.n_clients * (p.share_bytes + 128) * 2 + 8 * 3 * p.dimension
        return state, peak, f"the item factors of {info.n_items:,} items x {f}"

    def encode_broadcast(self, info: Any, broadcast: Any, version: int) -> bytes:
        assert isinstance(broadcast, DpalsModel)
        return broadcast.to_bytes()

    def decode_broadcast(self, info: Any, body: bytes) -> DpalsModel:
        return DpalsModel.from_bytes(body)

    def encode_state(self, info: Any, role: Any, broadcast: Any, version: int) -> bytes:
        assert isinstance(role, DpalsServer) and isinstance(broadcast, DpalsModel)
        return DpalsState(role.private_key(), broadcast).to_bytes()

    def artefact_bytes(self, info: Any, name: str, body: bytes) -> bytes:
        """The model alone: the private key never leaves the store."""
        return DpalsState.from_bytes(body).model.to_bytes()

    def restore(self, info: Any, role: Any, body: bytes | None) -> None:
        if body is not None:
            state = DpalsState.from_bytes(body)
            role.restore(state.private_key, state.model)

    def diagnostics(self, role: Any) -> dict[str, Any]:
        return {"contributors": int(role.contributors), "batches": int(role.batches)}

    def mirror(self, local: Any, diagnostics: dict[str, Any]) -> None:
        if isinstance(local, DpalsServer) and diagnostics:
            local.contributors = int(diagnostics["contributors"])
            local.batches = int(diagnostics["batches"])

    def service_params(self, local: Any) -> dict[str, str]:
        """The clients enrolled (the data's users)."""
        assert isinstance(local, DpalsServer)
        return {"n_clients": str(local.n_clients)}


SERVING = DpalsServing()
