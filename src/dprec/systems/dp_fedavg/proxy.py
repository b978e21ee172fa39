"""dp-fedavg's in-process proxy: what the secure sum hands the server each round.

It forwards ONE batch per round, the exact integer sum of the round's uploads (what the
cryptographic secure sum releases, bit for bit; issue 23 §1), and only once ``threshold``
clients uploaded: with secure aggregation ``min_honest`` (fewer honest shares would carry
less noise than the calibration assumes), and a second batch would reveal the sum of a
subset (docs/secure_sum.md, "One batch per round"; the rule lives in
:class:`~dprec.protocol.secure_sum.in_process.InProcessSumProxy`). A sharded run sums in
its shards and hands the total to :meth:`FedAvgSumProxy.forward_sum`. Over the services the
proxy's secure-sum part is the layer's :class:`~dprec.protocol.secure_sum.relay.SecureSumRelay`
(every round has the same parameters), and this object only holds the key it publishes,
which the simulated clients seal their mask seeds to.
"""

from __future__ import annotations

from dprec.protocol.secure_sum.in_process import InProcessSumProxy

__all__ = ["FedAvgSumProxy"]


class FedAvgSumProxy(InProcessSumProxy):
    """Sums the round's client blocks into one exact sum (:class:`InProcessSumProxy`). It
    makes no key in process (nothing is sealed there) and draws nothing from the run's
    generator (the clients' round seed is the round's first draw)."""

    system = "dp-fedavg's"
    key_in_process = False
