"""dp-pop's in-process proxy (:class:`ExactSumProxy`); over the services the proxy's
secret part is the layer's :class:`~dprec.protocol.secure_sum.relay.SecureSumRelay`.

It forwards ONE batch per round, and only once ``threshold`` (= ``min_honest``; 1 with a
trusted curator) distinct clients contributed (the rule lives in
:class:`~dprec.protocol.secure_sum.in_process.InProcessSumProxy`).
"""

from __future__ import annotations

from dprec.protocol.secure_sum.in_process import InProcessSumProxy

__all__ = ["ExactSumProxy"]


class ExactSumProxy(InProcessSumProxy):
    """The in-process proxy (:class:`InProcessSumProxy`): forwards the exact integer sum of
    the round's :class:`~dprec.protocol.secure_sum.wire.ClientBlock` as one
    :class:`~dprec.protocol.secure_sum.wire.ExactSum`, once at least ``threshold`` clients
    contributed."""

    system = "dp-pop's"
