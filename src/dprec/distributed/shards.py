"""A shard: the clients of some blocks, run in sequence, folded into one round's partial.

:class:`Shard` is plain Python: the local backend holds a list of them, the Ray backend
wraps each in an actor (:mod:`dprec.distributed.ray_backend`). One round is a function of
(the shard's clients as built, round, key, broadcast, the clients' state at the start of the
round) and returns (partial, pieces, the state at the end), so a round that is run again
after its worker died gives the same partial, never a second one on top.

The system adapters say what a shard folds (client side) and what the server makes of the
reduced sums (server side):

- :class:`DplcfAdapter`: per shard, the exact int32 pair counts m11 = X^T X of its clients'
  obfuscated bits (:class:`~dprec.models.bitcount.BitGram`; the diagonal holds the column
  sums) and the number of uploads; the server publishes from the total by
  :meth:`~dprec.systems.dplcf.server.SimilarityServer.apply_counts`, as in process.
- :class:`FmfAdapter`: per shard, for every (item, factor) cell, the number of reports and
  their integer sum (:class:`~dprec.protocol.aggregation.CellSums`, in the unit the
  in-process :class:`~dprec.protocol.aggregation.MeanAggregator` uses: C for the binary
  mechanism, the 2^-32 grid otherwise); the server steps from them by
  :meth:`~dprec.systems.fmf.server.FactorServer.apply_sums` (Eq. 9, written once in
  :func:`~dprec.systems.fmf.server.mean_gradient`).
- :class:`IntegerSumAdapter`: per shard, the exact int64 sum of its clients' integer
  vectors (what a secure sum of them yields, so the simulation adds them directly; issue 23
  §1); the proxy forwards the total as the round's one batch (``forward_sum``, with its
  threshold) and the server aggregates it as in process. The clients draw from their own
  generators of the round's key (``step_rows``), so the sum is the in-process engine's bit
  for bit whenever the in-process clients draw their seed first in the round.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np

from dprec.distributed.layout import block_generator
from dprec.distributed.partials import Pieces, RoundPartial
from dprec.errors import DprecError
from dprec.mechanisms.numeric import BinaryMechanism
from dprec.models.bitcount import BitGram
from dprec.protocol.aggregation import CellSums, MeanAggregator, planned_unit
from dprec.protocol.batches import ReportBatch
from dprec.protocol.engine import Clients, PassThrough, Proxy, Sent, Server, ShufflingProxy
from dprec.systems.deployable import serving_of
from dprec.systems.dplcf.client import ObfuscatingClients
from dprec.systems.dplcf.server import PairCounts, SimilarityServer
from dprec.systems.fmf.client import FederatedClients, check_item_matrix
from dprec.systems.fmf.server import FactorServer

__all__ = ["ADAPTERS", "DplcfAdapter", "FmfAdapter", "IntegerSumAdapter", "Shard",
           "SystemAdapter", "adapter_for"]

ClientsSource = Callable[[], Clients]
"""Builds a shard's clients where the shard runs (a ready subset, or a synthetic factory)."""


class SystemAdapter(ABC):
    """What a shard folds into its partial, and what the server makes of the total."""

    pieces: Pieces

    @abstractmethod
    def fold_round(self, clients: Clients, spans: list[tuple[int, int, int]], round: int,
                   key: int, broadcast: Any) -> tuple[dict[str, np.ndarray], RoundPartial]:
        """Run the clients of ``spans`` (block, start, stop) in sequence; their sums."""

    @abstractmethod
    def finish(self, server: Server, sums: dict[str, np.ndarray], total: RoundPartial,
               round: int) -> Any:
        """The server's next broadcast from the reduced sums (None: nothing came)."""

    @classmethod
    @abstractmethod
    def for_server(cls, server: Any, n_users: int, proxy: Proxy | None, k: int | None,
                   max_piece_bytes: int) -> SystemAdapter:
        """The adapter of a run of ``server`` (a clear error for a run it cannot shard)."""

    def state(self, clients: Clients) -> Any:
        """The clients' state carried between rounds (None: none)."""
        return None

    def restore(self, clients: Clients, state: Any) -> None:  # noqa: B027 - optional
        """Put back a :meth:`state`."""


def _record(partial: RoundPartial, sent: Sent | list[Sent] | None) -> None:
    for one in sent if isinstance(sent, list) else [] if sent is None else [sent]:
        partial.sent.setdefault((one.event, one.count, one.unit), []).append(one.users)


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
            _record(partial, sent)
        partial.upload_bytes = clients.upload_bytes - before
        sums = {"m11": gram.gram(), "users": np.array([gram.n_rows], np.int64)}
        partial.seconds = time.perf_counter() - t
        return sums, partial

    def finish(self, server: Server, sums: dict[str, np.ndarray], total: RoundPartial,
               round: int) -> Any:
        assert isinstance(server, SimilarityServer)
        return server.apply_counts(PairCounts.from_counts(sums["m11"], int(sums["users"][0])))


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
            _record(partial, sent)
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


class IntegerSumAdapter(SystemAdapter):
    """Exact integer sums (the secure sum's output): per shard, the int64 sum of its
    clients' vectors, ``clients.step_rows(start, stop, key) -> (vector, Sent or a list of
    them)``, after ``clients.prepare_round(broadcast, round)`` where the clients have one
    (a multi-round protocol's clients read the broadcast); the vectors have the server's
    ``sum_length`` (default ``n_items``) coordinates; the proxy's
    ``forward_sum(total, senders)`` makes the round's one batch (None below its threshold)
    and ``server.aggregate([batch], round)`` the broadcast. Integer addition is exact and
    associative, so the total does not depend on the shards or their order."""

    def __init__(self, n_items: int, proxy: Proxy, max_piece_bytes: int = 256 * 2**20) -> None:
        self.n_items = int(n_items)
        self.proxy = proxy
        self.pieces = Pieces((("sum", (self.n_items,), "int64"),), max_piece_bytes)

    @classmethod
    def for_server(cls, server: Any, n_users: int, proxy: Proxy | None, k: int | None,
                   max_piece_bytes: int) -> IntegerSumAdapter:
        """A run whose proxy forwards one exact sum (``forward_sum``)."""
        if proxy is None or not callable(getattr(proxy, "forward_sum", None)):
            raise DprecError(f"an integer-sum run needs its system's summing proxy, got "
                             f"{type(proxy).__name__}: build the run as the system's fit does")
        return cls(int(getattr(server, "sum_length", server.n_items)), proxy, max_piece_bytes)

    def fold_round(self, clients: Clients, spans: list[tuple[int, int, int]], round: int,
                   key: int, broadcast: Any) -> tuple[dict[str, np.ndarray], RoundPartial]:
        t = time.perf_counter()
        total = np.zeros(self.n_items, np.int64)
        partial = RoundPartial()
        prepare = getattr(clients, "prepare_round", None)
        if prepare is not None:
            prepare(broadcast, round)
        for _block, start, stop in spans:
            vector, sent = clients.step_rows(start, stop, key)  # type: ignore[attr-defined]
            total += vector
            partial.senders += stop - start
            for one in sent if isinstance(sent, list) else [sent]:
                _record(partial, one)
        partial.seconds = time.perf_counter() - t
        return {"sum": total}, partial

    def finish(self, server: Server, sums: dict[str, np.ndarray], total: RoundPartial,
               round: int) -> Any:
        batch = self.proxy.forward_sum(sums["sum"], total.senders)  # type: ignore[attr-defined]
        return None if batch is None else server.aggregate([batch], round)


def adapter_for(server: Server, n_users: int, proxy: Proxy | None, k: int | None = None,
                max_piece_bytes: int = 256 * 2**20) -> SystemAdapter:
    """The adapter the server role's system declares (its
    :class:`~dprec.protocol.deployment.Serving`, the one with the most specific role type);
    a clear error for what cannot be sharded."""
    aggregator = getattr(server, "aggregator", None)
    if aggregator is not None and type(aggregator) is not MeanAggregator:
        raise DprecError(f"a sharded backend sums every report (the plain mean); the "
                         f"{aggregator.name!r} aggregator needs the reports themselves")
    serving = serving_of(server)
    if serving is not None and serving.shard_adapter is not None:
        adapter: type[SystemAdapter] = ADAPTERS[serving.shard_adapter]
        return adapter.for_server(server, n_users, proxy, k, max_piece_bytes)
    raise DprecError(f"no sharded backend for {type(server).__name__}: only the systems whose "
                     "deployment descriptor (systems/<name>/serve.py) names a shard adapter "
                     "run on one")


ADAPTERS: dict[str, type[SystemAdapter]] = {"DplcfAdapter": DplcfAdapter,
                                            "FmfAdapter": FmfAdapter,
                                            "IntegerSumAdapter": IntegerSumAdapter}
"""The adapters a :class:`~dprec.protocol.deployment.Serving` can name."""


class Shard:
    """The clients of some blocks (``spans`` of its clients' rows), run in sequence."""

    def __init__(self, source: ClientsSource, spans: list[tuple[int, int, int]],
                 adapter: SystemAdapter) -> None:
        self.clients = source()
        self.spans = spans
        self.adapter = adapter
        self.initial = adapter.state(self.clients)

    def run_round(self, round: int, key: int, broadcast: Any, state: Any
                  ) -> tuple[RoundPartial, list[np.ndarray], Any]:
        """One round from ``state`` (None: the clients as built): (partial, pieces, state)."""
        self.adapter.restore(self.clients, self.initial if state is None else state)
        sums, partial = self.adapter.fold_round(self.clients, self.spans, round, key,
                                                broadcast)
        return partial, self.adapter.pieces.split(sums), self.adapter.state(self.clients)

