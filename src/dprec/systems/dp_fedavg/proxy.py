"""dp-fedavg's in-process proxy: what the secure sum hands the server each round.

It forwards ONE batch per round, the exact integer sum of the round's uploads (what the
cryptographic secure sum releases, bit for bit; issue 23 §1), and only once ``threshold``
clients uploaded: with secure aggregation ``min_honest`` (fewer honest shares would carry
less noise than the calibration assumes), and a second batch would reveal the sum of a
subset (docs/secure_sum.md, "One batch per round"; the rule lives in
:class:`~dprec.protocol.secure_sum.in_process.InProcessSumProxy`). A sharded run sums in
its shards and hands the total to :meth:`FedAvgSumProxy.forward_sum`. Over the services the
proxy's secure-sum part is dp-pop's :class:`~dprec.systems.dp_pop.proxy.SecureSumRelay`
(every round has the same parameters), and this object only holds the key it publishes,
which the simulated clients seal their mask seeds to.
"""

from __future__ import annotations

import numpy as np

from dprec.protocol.secure_sum.in_process import InProcessSumProxy
from dprec.systems.dp_fedavg.messages import ClientBlock, NoisySum

__all__ = ["FedAvgSumProxy"]


class FedAvgSumProxy(InProcessSumProxy):
    """Sums the round's :class:`ClientBlock` blocks into one :class:`NoisySum`
    (:class:`InProcessSumProxy`). It makes no key in process (nothing is sealed there) and
    draws nothing from the run's generator (the clients' round seed is the round's first
    draw)."""

    system, accepts, accepts_plural = "dp-fedavg's", ClientBlock, "ClientBlocks"
    key_in_process = False

    def part(self, message: ClientBlock) -> np.ndarray:
        return message.total

    def batch(self, total: np.ndarray, senders: int) -> NoisySum:
        return NoisySum(total, senders)
