"""dp-pop's in-process proxy (:class:`ExactSumProxy`); over the services the proxy's
secret part is the layer's :class:`~dprec.protocol.secure_sum.relay.SecureSumRelay`.

It forwards ONE batch per round, and only once ``threshold`` (= ``min_honest``) distinct
clients contributed (the rule lives in
:class:`~dprec.protocol.secure_sum.in_process.InProcessSumProxy`).
"""

from __future__ import annotations

import numpy as np

from dprec.protocol.secure_sum.in_process import InProcessSumProxy
from dprec.systems.dp_pop.messages import NoisyVectors

__all__ = ["ExactSumProxy"]


class ExactSumProxy(InProcessSumProxy):
    """The in-process proxy (:class:`InProcessSumProxy`): forwards the exact integer sum of
    the round's :class:`NoisyVectors` as one
    :class:`~dprec.protocol.secure_sum.wire.ExactSum`, once at least ``threshold`` clients
    contributed."""

    system, accepts, accepts_plural = "dp-pop's", NoisyVectors, "NoisyVectors"

    def part(self, message: NoisyVectors) -> np.ndarray:
        return message.vectors.sum(axis=0, dtype=np.int64)
