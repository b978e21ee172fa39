"""FMF-LDP as services, the server half: the :class:`FactorServer` role; it keeps V between
rounds, which is its broadcast (float64 losslessly, float32 to devices)
(:mod:`dprec.protocol.deployment`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dprec.errors import DprecError
from dprec.protocol.aggregation import Aggregator, make_aggregator
from dprec.protocol.deployment import Serving
from dprec.protocol.messages import ItemMatrix, ItemMatrix64
from dprec.systems.fmf.defences import FMF_AGGREGATORS
from dprec.systems.fmf.server import FactorServer
from dprec.systems.fmf.shard import FmfAdapter

__all__ = ["SERVING", "FmfServing"]


class FmfServing(Serving):
    """The server half of FMF-LDP."""

    role_type = FactorServer
    aggregators = FMF_AGGREGATORS
    shard_adapter = FmfAdapter

    def server_role(self, info: Any, aggregator: Aggregator) -> FactorServer:
        """As ``FederatedMF.fit`` builds it; the aggregator is ``--aggregator``'s, or the
        config's ``aggregator`` when ``--aggregator`` is left at mean (a simulation passes
        its config), and they must agree when both are set."""
        c = info.config
        wanted = str(c.aggregator)
        if aggregator.spec == "mean":
            aggregator = make_aggregator(wanted, FMF_AGGREGATORS)
        elif wanted != "mean" and make_aggregator(wanted, FMF_AGGREGATORS).spec != aggregator.spec:
            raise DprecError(f"--aggregator {aggregator.spec} and the config's aggregator "
                             f"{wanted} differ: set one")
        return FactorServer(info.n_items, int(c.factors), float(c.lr),
                            float(c.regularization), int(c.server_steps), float(c.clip),
                            float(c.init_scale), info.mechanism(), aggregator)

    def role_memory(self, info: Any) -> tuple[int, int, str]:
        """V, N x F float64; starting draws and scales it, and a round holds V, the round's
        sum, the new V and its encoded broadcast: 4 copies at the peak."""
        n, f = info.n_items, info.n_factors
        state = 8 * n * f
        return state, 4 * state, f"V ({n:,} x {f:,} float64)"

    def encode_broadcast(self, info: Any, broadcast: Any, version: int) -> bytes:
        return ItemMatrix64(np.asarray(broadcast, np.float64), version).to_bytes()

    def decode_broadcast(self, info: Any, body: bytes) -> np.ndarray:
        return ItemMatrix64.from_bytes(body).matrix.astype(np.float64)

    def artefact_bytes(self, info: Any, name: str, body: bytes) -> bytes:
        """``item-matrix`` is V in float32 for devices; ``item-matrix-f64`` the stored V."""
        if name == "item-matrix":
            m = ItemMatrix64.from_bytes(body)
            return ItemMatrix(m.matrix, m.epoch).to_bytes()
        return body

    def restore(self, info: Any, role: Any, body: bytes | None) -> None:
        """V as last published."""
        if body is not None:
            role.V = self.decode_broadcast(info, body)


SERVING = FmfServing()
