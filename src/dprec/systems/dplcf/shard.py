"""DPLCF on a sharded backend (:mod:`dprec.protocol.sharding`): per shard, the exact int32
pair counts m11 = X^T X of its clients' obfuscated bits
(:class:`~dprec.models.bitcount.BitGram`; the diagonal holds the column sums) and the number
of uploads; the server publishes from the total by
:meth:`~dprec.systems.dplcf.server.SimilarityServer.apply_counts`, as in process."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from dprec.errors import DprecError
from dprec.models.bitcount import BitGram
from dprec.protocol.engine import Clients, PassThrough, Proxy, Server
from dprec.protocol.sharding import (
    Pieces,
    RoundPartial,
    SystemAdapter,
    block_generator,
    record_sent,
)
from dprec.systems.dplcf.client import ObfuscatingClients
from dprec.systems.dplcf.server import PairCounts, SimilarityServer

__all__ = ["DplcfAdapter"]


class DplcfAdapter(SystemAdapter):
    """DPLCF: integer pair counts and upload counts per shard (docs/architecture.md §1)."""

    def __init__(self, n_items: int, max_piece_bytes: int = 256 * 2**20) -> None:
        self.n_items = n_items
        self.pieces = Pieces((("m11", (n_items, n_items), "int32"), ("users", (1,), "int64")),
                             max_piece_bytes)

    @classmethod
    def for_server(cls, server: Any, n_users: int, proxy: Proxy | None, k: int | None,
                   max_piece_bytes: int) -> DplcfAdapter:
        """DPLCF runs without a proxy."""
        if proxy is not None and not isinstance(proxy, PassThrough):
            raise DprecError("DPLCF runs without a proxy")
        return cls(server.n_items, max_piece_bytes)

    def fold_round(self, clients: Clients, spans: list[tuple[int, int, int]], round: int,
                   key: int, broadcast: Any) -> tuple[dict[str, np.ndarray], RoundPartial]:
        assert isinstance(clients, ObfuscatingClients)
        t = time.perf_counter()
        gram = BitGram(self.n_items)
        partial = RoundPartial()
        before = clients.upload_bytes
        for block, start, stop in spans:
            msg, sent = clients.step_rows(start, stop, block_generator(key, round, block))
            gram.add(msg.packed)
            partial.senders += stop - start
            record_sent(partial, sent)
        partial.upload_bytes = clients.upload_bytes - before
        sums = {"m11": gram.gram(), "users": np.array([gram.n_rows], np.int64)}
        partial.seconds = time.perf_counter() - t
        return sums, partial

    def finish(self, server: Server, sums: dict[str, np.ndarray], total: RoundPartial,
               round: int) -> Any:
        assert isinstance(server, SimilarityServer)
        return server.apply_counts(PairCounts.from_counts(sums["m11"], int(sums["users"][0])))
