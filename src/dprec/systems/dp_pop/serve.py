"""dp-pop as services, the server half: the :class:`PopularityServer` role built from the
public description, its broadcast (:class:`PopularityModel`: the server's public key, then
the noisy counts) and the state its store keeps (:class:`PopularityState`: the model and
the server's private key, so a restarted server opens shares sealed to its published key;
only the model is ever published) (:mod:`dprec.protocol.deployment`)."""

from __future__ import annotations

from typing import Any

from dprec.protocol.aggregation import Aggregator
from dprec.protocol.secure_sum.deploy import proved_check_bytes
from dprec.protocol.secure_sum.proved import ProvedUpload
from dprec.protocol.secure_sum.serving import SecureSumServing
from dprec.protocol.secure_sum.validity import CHECK_CHUNK_BYTES
from dprec.systems.dp_pop.deploy import check_of, round_of
from dprec.systems.dp_pop.messages import PopularityModel, PopularityState
from dprec.systems.dp_pop.server import PopularityServer

__all__ = ["SERVING", "PopServing"]


class PopServing(SecureSumServing):
    """The server half of dp-pop (aggregation=secure)."""

    role_type = PopularityServer
    model_type = PopularityModel
    state_type = PopularityState

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
        n = int(info.config.n_clients)
        if check is None:
            return state, state + n * (p.share_bytes + 128) * 2, \
                f"the noisy counts of {info.n_items:,} items"
        per_report = 8 * int(info.n_items)  # + its output share
        peak = state + 2 * proved_check_bytes(check, n) + 2 * min(
            n, CHECK_CHUNK_BYTES // ProvedUpload.size(check) + 1) * per_report
        return state, peak, f"the noisy counts of {info.n_items:,} items"


SERVING = PopServing()
