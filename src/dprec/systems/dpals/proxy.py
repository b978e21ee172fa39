"""dpals' proxy: the simulation's (:class:`ExactSumProxy`) and the service's secret part
(:class:`DpalsRelay`, what ``dprec serve proxy`` runs through the descriptor).

Both forward ONE batch per round, and only once ``threshold`` (= ``min_honest``) distinct
clients contributed (docs/secure_sum.md, "One batch per round"; the rule lives in
:class:`~dprec.protocol.secure_sum.in_process.InProcessSumProxy`). Each round has its own
vector length, so the relay checks and releases a round with that round's secure-sum
parameters (:mod:`dprec.systems.dpals.plan`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from dprec.errors import DprecError
from dprec.protocol.deployment import ProxySecrets
from dprec.protocol.messages import Message, MessageError
from dprec.protocol.secure_sum.errors import SecureSumError
from dprec.protocol.secure_sum.in_process import PUBLISHED_KEY, InProcessSumProxy
from dprec.protocol.secure_sum.messages import Upload, associated_data
from dprec.protocol.secure_sum.proxy import SecureSumProxy
from dprec.protocol.secure_sum.sealed import open_box
from dprec.systems.dp_pop.messages import SumRelease, SumUpload
from dprec.systems.dp_pop.proxy import proxy_keys
from dprec.systems.dpals.messages import ClientBlock, ExactSum
from dprec.systems.dpals.plan import RunPlan

__all__ = ["DpalsRelay", "ExactSumProxy"]


class DpalsRelay(ProxySecrets):
    """The service proxy's part of dpals' secure sums: its key (kept in its state folder),
    the check of every upload (its seed box must open under this key for this round, with
    the round's length) and each round's release."""

    def __init__(self, plan: RunPlan, state_dir: Path) -> None:
        self.plan = plan
        self.keys = proxy_keys(state_dir)

    def published(self) -> dict[str, Any]:
        return {PUBLISHED_KEY: self.keys.public.hex()}

    def _params(self, round: int) -> Any:
        try:
            return self.plan.round(round).params
        except DprecError as e:
            raise MessageError(str(e)) from None

    def admit(self, message: Message, round: int) -> None:
        if not isinstance(message, SumUpload):
            raise MessageError(f"expected a SumUpload, got {type(message).__name__}")
        try:
            upload = Upload.from_bytes(message.data, self._params(round))
            if upload.round_id != round:
                raise MessageError(f"the upload is sealed for round {upload.round_id}, this is "
                                   f"round {round}: refused")
            open_box(self.keys, upload.seed_box,
                     associated_data(round, upload.message_id, "proxy"))
        except SecureSumError as e:
            raise MessageError(str(e)) from None

    def release(self, rows: list[bytes], round: int, threshold: int) -> bytes:
        agg = SecureSumProxy(self._params(round), self.keys, round, threshold)
        for i, row in enumerate(rows):
            agg.submit(str(i), SumUpload.from_bytes(row).data)
        return SumRelease(agg.release().to_bytes()).to_bytes()


class ExactSumProxy(InProcessSumProxy):
    """The in-process proxy (:class:`InProcessSumProxy`): forwards the exact integer sum of
    the round's :class:`ClientBlock` totals as one :class:`ExactSum`, once at least
    ``threshold`` clients contributed."""

    system, accepts, accepts_plural = "dpals'", ClientBlock, "ClientBlocks"

    def part(self, message: ClientBlock) -> np.ndarray:
        return message.total

    def batch(self, total: np.ndarray, senders: int) -> ExactSum:
        return ExactSum(total, senders)
