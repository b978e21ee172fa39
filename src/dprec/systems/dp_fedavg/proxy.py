"""dp-fedavg's in-process proxy: what the secure sum hands the server each round.

It forwards ONE batch per round, the exact integer sum of the round's uploads (what the
cryptographic secure sum releases, bit for bit; issue 23 §1), and only once ``threshold``
clients uploaded: with secure aggregation ``min_honest`` (fewer honest shares would carry
less noise than the calibration assumes), and a second batch would reveal the sum of a
subset (docs/secure_sum.md, "One batch per round"). A sharded run sums in its shards and
hands the total to :meth:`FedAvgSumProxy.forward_sum`. Over the services the proxy's
secure-sum part is dp-pop's :class:`~dprec.systems.dp_pop.proxy.SecureSumRelay` (every round
has the same parameters), and this object only holds the key it publishes, which the
simulated clients seal their mask seeds to.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from dprec.errors import DprecError
from dprec.protocol.engine import Proxy
from dprec.systems.dp_fedavg.messages import KEY_BYTES, ClientBlock, NoisySum

__all__ = ["FedAvgSumProxy"]


class FedAvgSumProxy(Proxy):
    """Sums the round's :class:`ClientBlock` blocks into one :class:`NoisySum`; never a
    second batch. It draws nothing from the run's generator (the clients' round seed is the
    round's first draw)."""

    def __init__(self, threshold: int) -> None:
        if isinstance(threshold, bool) or int(threshold) != threshold or threshold < 1:
            raise DprecError(f"threshold must be an integer >= 1, got {threshold!r}")
        self.threshold = int(threshold)
        self.senders = 0
        self.batches: list[int] = []
        """Senders in each batch the server received in the last round (one, or none)."""
        self.public_key: bytes | None = None
        """The service proxy's published key (None in process: nothing is sealed)."""

    def adopt_published(self, published: dict[str, Any]) -> None:
        """Over the services: the proxy's published key is what clients seal seeds to."""
        raw = published.get("secure_sum_proxy_key")
        try:
            key = bytes.fromhex(raw) if isinstance(raw, str) else b""
        except ValueError:
            key = b""
        if len(key) != KEY_BYTES:
            raise DprecError("the proxy publishes no 32-byte secure-sum key")
        self.public_key = key

    def forward_sum(self, total: np.ndarray | None, senders: int) -> NoisySum | None:
        """The round's one batch from the exact sum of ``senders`` clients' uploads (summed
        here, or by the shards of a sharded run); None below the threshold."""
        self.senders = int(senders)
        self.batches = []
        self.forwarded = total is not None and self.senders >= self.threshold
        if not self.forwarded:
            return None
        self.batches = [self.senders]
        return NoisySum(np.asarray(total, np.int64), self.senders)

    def forward(self, messages: Iterable[Any]) -> Iterator[NoisySum]:
        total: np.ndarray | None = None
        senders = 0
        for m in messages:
            if not isinstance(m, ClientBlock):
                raise DprecError(f"dp-fedavg's proxy sums ClientBlocks, got "
                                 f"{type(m).__name__}")
            total = m.total.copy() if total is None else total + m.total
            senders += m.n_clients
        batch = self.forward_sum(total, senders)
        if batch is not None:
            yield batch

    def account(self, event: Any) -> Any:
        """The event itself: one batch carries the round's whole noise."""
        if len(self.batches) != 1:
            raise DprecError(f"a secure-sum round must reach the server as one batch, got "
                             f"{len(self.batches)}: each batch would reveal its own sum")
        return event
