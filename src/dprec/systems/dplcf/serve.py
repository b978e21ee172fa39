"""DPLCF as services, the server half: the :class:`SimilarityServer` role; it keeps nothing
between rounds, its broadcast is the neighbour lists (:mod:`dprec.protocol.deployment`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dprec.errors import DprecError
from dprec.protocol.aggregation import Aggregator
from dprec.protocol.deployment import Serving
from dprec.systems.dplcf.defences import DPLCF_AGGREGATORS
from dprec.systems.dplcf.messages import NeighbourLists
from dprec.systems.dplcf.server import SimilarityEstimate, SimilarityServer
from dprec.systems.dplcf.shard import DplcfAdapter

__all__ = ["SERVING", "DplcfServing"]


class DplcfServing(Serving):
    """The server half of every DPLCF variant."""

    role_type = SimilarityServer
    aggregators = DPLCF_AGGREGATORS
    shard_adapter = DplcfAdapter

    def server_role(self, info: Any, aggregator: Aggregator) -> SimilarityServer:
        """As ``LocalItemCF.fit`` builds it."""
        c = info.config
        if c.history_cap is not None:
            raise DprecError("history_cap is enforced by the simulated clients only (the device "
                             "client does not cap its history yet): serve without it")
        if c.aggregator not in ("mean", aggregator.spec, aggregator.name):
            raise DprecError(f"the config names aggregator {c.aggregator!r} but the server "
                             f"runs {aggregator.spec!r}: choose it with --aggregator")
        return SimilarityServer(info.n_items, info.mechanism(), c.estimator,
                                int(c.neighbours),
                                c.neighbourhood == "user", aggregator)

    def role_memory(self, info: Any) -> tuple[int, int, str]:
        """The pair counts (N x N int32) and the similarities (N x N float32) of a round:
        2 N^2 x 4 bytes at the peak."""
        n = info.n_items
        state = 4 * n * n
        return state, 2 * state, f"the pair counts ({n:,} x {n:,} int32)"

    def encode_broadcast(self, info: Any, broadcast: Any, version: int) -> bytes:
        assert isinstance(broadcast, NeighbourLists)
        return broadcast.to_bytes()

    def decode_broadcast(self, info: Any, body: bytes) -> NeighbourLists:
        return NeighbourLists.from_bytes(body)

    def diagnostics(self, role: Any) -> dict[str, Any]:
        """The round's clipped pairs, shrinkage and upload count."""
        est = getattr(role, "estimate", None)
        if est is None:
            return {}
        return {"clipped_pairs": int(est.clipped), "shrinkage_phi": est.shrinkage_phi,
                "users_received": int(getattr(role, "users_received", 0))}

    def mirror(self, local: Any, diagnostics: dict[str, Any]) -> None:
        """The remote role's clipped pairs, shrinkage and upload count."""
        if isinstance(local, SimilarityServer) and diagnostics:
            local.estimate = SimilarityEstimate(np.empty((0, 0), np.float32),
                                                int(diagnostics["clipped_pairs"]),
                                                diagnostics["shrinkage_phi"])
            local.users_received = int(diagnostics["users_received"])


SERVING = DplcfServing()
