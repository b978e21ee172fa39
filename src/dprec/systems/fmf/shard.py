"""FMF-LDP on a sharded backend (:mod:`dprec.protocol.sharding`): per shard, for every
(item, factor) cell, the number of reports and their integer sum
(:class:`~dprec.protocol.aggregation.CellSums`, in the unit the in-process
:class:`~dprec.protocol.aggregation.MeanAggregator` uses: C for the binary mechanism, the
2^-32 grid otherwise); the server steps from them by
:meth:`~dprec.systems.fmf.server.FactorServer.apply_sums` (Eq. 9, written once in
:func:`~dprec.systems.fmf.server.mean_gradient`)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from dprec.errors import DprecError
from dprec.mechanisms.numeric import BinaryMechanism
from dprec.protocol.aggregation import CellSums, planned_unit
from dprec.protocol.batches import ReportBatch
from dprec.protocol.engine import Clients, Proxy, Server, ShufflingProxy
from dprec.protocol.sharding import (
    Pieces,
    RoundPartial,
    SystemAdapter,
    block_generator,
    record_sent,
)
from dprec.systems.fmf.client import FederatedClients, check_item_matrix
from dprec.systems.fmf.server import FactorServer

__all__ = ["FmfAdapter"]


class FmfAdapter(SystemAdapter):
    """FMF-LDP: per (item, factor) report counts and integer sums (:class:`CellSums`)."""

    def __init__(self, n_users: int, n_items: int, factors: int, k: int,
                 mechanism: Any, max_piece_bytes: int = 256 * 2**20) -> None:
        self.n_items, self.factors, self.k = n_items, factors, k
        self.mechanism = mechanism
        self.binary = isinstance(mechanism, BinaryMechanism)
        bound = 1.0 if mechanism is None else float(mechanism.scale)
        self.bound = bound
        # the unit the in-process MeanAggregator picks (sum_unit), fixed before the run
        # from the planned report count so every shard sums on the same grid
        self.unit = bound if self.binary else planned_unit(max(1, n_users * k), bound)
        cells = n_items * factors
        self.pieces = Pieces((("reports", (cells,), "int64"), ("units", (cells,), "int64"),
                              ("magnitude", (1,), "int64")), max_piece_bytes)

    @classmethod
    def for_server(cls, server: Any, n_users: int, proxy: Proxy | None, k: int | None,
                   max_piece_bytes: int) -> FmfAdapter:
        """FMF-LDP's reports through a shuffling proxy (FCF has no integer sums)."""
        if not isinstance(proxy, ShufflingProxy) or k is None:
            raise DprecError("FCF (exact float gradient sums) has no integer partial sums: "
                             "run it with the local engine (no --backend)")
        return cls(n_users, server.n_items, server.factors, k, server.mechanism,
                   max_piece_bytes)

    def fold_round(self, clients: Clients, spans: list[tuple[int, int, int]], round: int,
                   key: int, broadcast: Any) -> tuple[dict[str, np.ndarray], RoundPartial]:
        assert isinstance(clients, FederatedClients)
        t = time.perf_counter()
        V = check_item_matrix(broadcast, self.n_items, self.factors)
        gram = V.T @ V
        cells = self.n_items * self.factors
        sums = CellSums.zeros(cells, self.unit)
        partial = RoundPartial()
        for block, start, stop in spans:
            msg, sent = clients.step_rows(V, gram, start, stop,
                                          block_generator(key, round, block))
            record_sent(partial, sent)
            if msg is None:
                continue
            assert isinstance(msg, ReportBatch)
            flat = msg.items.astype(np.int64).ravel() * self.factors + msg.factors.ravel()
            if msg.bits is not None:  # +-C, as FactorServer.aggregate reads one-bit reports
                values = self.mechanism.estimate(msg.bits.ravel().view(np.bool_))
            else:
                assert msg.values is not None
                if msg.values.size and not np.abs(msg.values).max() <= self.bound:
                    raise DprecError(f"a report value exceeds the mechanism's bound "
                                     f"{self.bound:g} (or is not finite): the planned int64 "
                                     "sums could overflow")
                # float32, as the proxy forwards them (a value at the bound may round up
                # by 2^-24 of it: within planned_unit's 2x margin below int64's limit)
                values = msg.values.ravel().astype(np.float32)
            sums = sums + CellSums.of(flat, values, cells, self.unit)
            partial.senders += msg.n_clients
        partial.seconds = time.perf_counter() - t
        return {"reports": sums.reports, "units": sums.units,
                "magnitude": np.array([sums.magnitude], np.int64)}, partial

    def finish(self, server: Server, sums: dict[str, np.ndarray], total: RoundPartial,
               round: int) -> Any:
        assert isinstance(server, FactorServer)
        return server.apply_sums(CellSums(sums["units"], sums["reports"], self.unit,
                                          int(sums["magnitude"][0])))

    def state(self, clients: Clients) -> Any:
        assert isinstance(clients, FederatedClients)
        return clients.state()

    def restore(self, clients: Clients, state: Any) -> None:
        assert isinstance(clients, FederatedClients)
        clients.restore(state)
