"""A shard: the clients of some blocks, run in sequence, folded into one round's partial.

:class:`Shard` is plain Python: the local backend holds a list of them, the Ray backend
wraps each in an actor (:mod:`dprec.distributed.ray_backend`). One round is a function of
(the shard's clients as built, round, key, broadcast, the clients' state at the start of the
round) and returns (partial, pieces, the state at the end), so a round that is run again
after its worker died gives the same partial, never a second one on top.

What a shard folds (client side) and what the server makes of the reduced sums (server side)
is the system's :class:`~dprec.protocol.sharding.SystemAdapter`, in ``systems/<name>/shard.py``
and named by its :class:`~dprec.protocol.deployment.Serving` (``shard_adapter``); the
secure-sum systems share :class:`~dprec.protocol.sharding.IntegerSumAdapter`. This module
knows no system.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dprec.errors import DprecError
from dprec.protocol.aggregation import MeanAggregator
from dprec.protocol.engine import Clients, Proxy, Server
from dprec.protocol.sharding import RoundPartial, SystemAdapter
from dprec.systems.deployable import serving_of

__all__ = ["Shard", "adapter_for"]

ClientsSource = Callable[[], Clients]
"""Builds a shard's clients where the shard runs (a ready subset, or a synthetic factory)."""


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
        return serving.shard_adapter.for_server(server, n_users, proxy, k, max_piece_bytes)
    raise DprecError(f"no sharded backend for {type(server).__name__}: only the systems whose "
                     "deployment descriptor (systems/<name>/serve.py) names a shard adapter "
                     "run on one")


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

