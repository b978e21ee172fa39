"""dp-pop as services, the server half: the :class:`PopularityServer` role built from the
public description, its broadcast (:class:`PopularityModel`: the server's public key, then
the noisy counts) and the state its store keeps (:class:`PopularityState`: the model and
the server's private key, so a restarted server opens shares sealed to its published key;
only the model is ever published) (:mod:`dprec.protocol.deployment`)."""

from __future__ import annotations

from typing import Any

from dprec.protocol.aggregation import Aggregator
from dprec.protocol.deployment import Serving
from dprec.protocol.secure_sum.proved import ProvedUpload
from dprec.protocol.secure_sum.validity import CHECK_CHUNK_BYTES
from dprec.protocol.sharding import IntegerSumAdapter
from dprec.systems.dp_pop.deploy import check_of, proved_check_bytes, round_of
from dprec.systems.dp_pop.messages import PopularityModel, PopularityState
from dprec.systems.dp_pop.server import PopularityServer

__all__ = ["SERVING", "PopServing"]


class PopServing(Serving):
    """The server half of dp-pop (aggregation=secure)."""

    role_type = PopularityServer
    shard_adapter = IntegerSumAdapter
    """A sharded run sums the clients' noisy vectors exactly (what the secure sum yields)."""

    def server_role(self, info: Any, aggregator: Aggregator) -> PopularityServer:
        """As ``DpPop.fit`` builds it."""
        cal = round_of(info)
        return PopularityServer(info.n_items, cal.n_clients, cal.min_honest, cal.params,
                                cal.share, check_of(info))

    def role_memory(self, info: Any) -> tuple[int, int, str]:
        """The counts (d int64); a round also holds the release (one share per client), or
        with proofs one share-check chunk (the output shares stay on disk)."""
        p, check = round_of(info).params, check_of(info)
        state = 8 * info.n_items
        n = int(info.config["n_clients"])
        if check is None:
            return state, state + n * (p.share_bytes + 128) * 2, \
                f"the noisy counts of {info.n_items:,} items"
        per_report = 8 * int(info.n_items)  # + its output share
        peak = state + 2 * proved_check_bytes(check, n) + 2 * min(
            n, CHECK_CHUNK_BYTES // ProvedUpload.size(check) + 1) * per_report
        return state, peak, f"the noisy counts of {info.n_items:,} items"

    def encode_broadcast(self, info: Any, broadcast: Any, version: int) -> bytes:
        assert isinstance(broadcast, PopularityModel)
        return broadcast.to_bytes()

    def decode_broadcast(self, info: Any, body: bytes) -> PopularityModel:
        return PopularityModel.from_bytes(body)

    def encode_state(self, info: Any, role: Any, broadcast: Any, version: int) -> bytes:
        assert isinstance(role, PopularityServer) and isinstance(broadcast, PopularityModel)
        return PopularityState(role.private_key(), broadcast).to_bytes()

    def artefact_bytes(self, info: Any, name: str, body: bytes) -> bytes:
        """The model alone: the private key never leaves the store."""
        return PopularityState.from_bytes(body).model.to_bytes()

    def restore(self, info: Any, role: Any, body: bytes | None) -> None:
        if body is not None:
            role.restore_key(PopularityState.from_bytes(body).private_key)

    def diagnostics(self, role: Any) -> dict[str, Any]:
        return {"contributors": int(role.contributors), "batches": int(role.batches)}

    def mirror(self, local: Any, diagnostics: dict[str, Any]) -> None:
        if isinstance(local, PopularityServer) and diagnostics:
            local.contributors = int(diagnostics["contributors"])
            local.batches = int(diagnostics["batches"])

    def service_params(self, local: Any) -> dict[str, str]:
        """The clients enrolled (the data's users)."""
        assert isinstance(local, PopularityServer)
        return {"n_clients": str(local.n_clients)}


SERVING = PopServing()
