"""LDP-SVD as services, the server half: the :class:`SVDServer` role; it keeps nothing
between rounds (one round), its broadcast is the trained Funk SVD, float64
(:mod:`dprec.protocol.deployment`)."""

from __future__ import annotations

from typing import Any

from dprec.models.funk_svd import FunkSVD
from dprec.protocol.aggregation import Aggregator
from dprec.protocol.deployment import Serving
from dprec.systems.ldp_svd.messages import RatingModel, Scale
from dprec.systems.ldp_svd.server import SVDServer, weighted_config

__all__ = ["SERVING", "RatingServing"]


class RatingServing(Serving):
    """The server half of every LDP rating system."""

    role_type = SVDServer

    def server_role(self, info: Any, aggregator: Aggregator) -> SVDServer:
        """As ``LocalRatingSVD.fit`` builds it."""
        c = info.config
        return SVDServer(int(c.n_users), info.n_items, Scale(c.rating_min, c.rating_max),
                         info.mechanism(), c.svd_config(), bool(c.noise_weighting))

    def role_memory(self, info: Any) -> tuple[int, int, str]:
        """The model, (M + N) x (F + 1) float64; a round also holds every report (at most
        M x N, 20 bytes each in the batches, 12 in the CSR)."""
        m, n, f = int(info.config.n_users), info.n_items, int(info.config.factors)
        state = 8 * (m + n) * (f + 1)
        return state, 2 * state + 32 * m * n, f"the Funk SVD ({m:,} users, {n:,} items, {f} " \
                                              "factors, float64)"

    def encode_broadcast(self, info: Any, broadcast: Any, version: int) -> bytes:
        assert isinstance(broadcast, FunkSVD)
        users, items = broadcast.known
        return RatingModel(broadcast.global_mean, broadcast.user_factors,
                           broadcast.item_factors, broadcast.user_biases,
                           broadcast.item_biases, users, items).to_bytes()

    def decode_broadcast(self, info: Any, body: bytes) -> FunkSVD:
        """The model as the role returned it (its settings: the role's, noise-weighted)."""
        m = RatingModel.from_bytes(body)
        svd, _ = weighted_config(info.config.svd_config(), info.mechanism(),
                                 bool(info.config.noise_weighting))
        return FunkSVD.from_parameters(svd, m.mu, m.user_factors, m.item_factors,
                                       m.user_biases, m.item_biases, m.user_known,
                                       m.item_known)

    def diagnostics(self, role: Any) -> dict[str, Any]:
        """The round's senders and reports."""
        return {"senders": int(role.senders), "reports_received": int(role.reports_received)}

    def mirror(self, local: Any, diagnostics: dict[str, Any]) -> None:
        if isinstance(local, SVDServer) and diagnostics:
            local.senders = int(diagnostics["senders"])
            local.reports_received = int(diagnostics["reports_received"])

    def service_params(self, local: Any) -> dict[str, str]:
        """The users enrolled and the public scale (the data set's, when declared)."""
        assert isinstance(local, SVDServer)
        return {"n_users": str(local.n_users), "rating_min": repr(local.scale.low),
                "rating_max": repr(local.scale.high)}


SERVING = RatingServing()
