"""dpals' proxy: the simulation's (:class:`ExactSumProxy`) and the service's secret part
(:class:`DpalsRelay`, what ``dprec serve proxy`` runs through the descriptor).

Both forward ONE batch per round, and only once ``threshold`` (= ``min_honest``) distinct
clients contributed (docs/secure_sum.md, "One batch per round"). Each round has its own
vector length, so the relay checks and releases a round with that round's secure-sum
parameters (:mod:`dprec.systems.dpals.plan`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from dprec.errors import DprecError
from dprec.protocol.deployment import ProxySecrets
from dprec.protocol.engine import Proxy
from dprec.protocol.messages import Message, MessageError
from dprec.protocol.secure_sum.errors import SecureSumError
from dprec.protocol.secure_sum.messages import Upload, associated_data
from dprec.protocol.secure_sum.proxy import SecureSumProxy
from dprec.protocol.secure_sum.sealed import KeyPair, open_box
from dprec.systems.dp_pop.messages import SumRelease, SumUpload
from dprec.systems.dp_pop.proxy import proxy_keys
from dprec.systems.dpals.messages import KEY_BYTES, ClientBlock, ExactSum
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
        return {"secure_sum_proxy_key": self.keys.public.hex()}

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


class ExactSumProxy(Proxy):
    """The in-process proxy: forwards the exact integer sum of the round's noisy vectors
    (what the secure sum releases to the server, bit for bit) once at least ``threshold``
    clients contributed; never a second batch."""

    def __init__(self, threshold: int) -> None:
        if isinstance(threshold, bool) or int(threshold) != threshold or threshold < 1:
            raise DprecError(f"threshold must be an integer >= 1, got {threshold!r}")
        self.threshold = int(threshold)
        self.senders = 0
        self.batches: list[int] = []
        """Senders in each batch the server received in the last round (one, or none)."""
        self.public_key: bytes | None = None

    def start(self, rng: np.random.Generator) -> None:
        """A key pair from the OS CSPRNG (never from ``rng``: it changes no sum)."""
        self.public_key = KeyPair().public

    def adopt_published(self, published: dict[str, Any]) -> None:
        """Over the services: the proxy's published key is what clients seal seeds to."""
        raw = published.get("secure_sum_proxy_key")
        if not isinstance(raw, str) or len(raw) != 2 * KEY_BYTES:
            raise DprecError("the proxy publishes no 32-byte secure-sum key")
        self.public_key = bytes.fromhex(raw)

    def forward_sum(self, total: np.ndarray, senders: int) -> ExactSum | None:
        """The round's one batch of ``senders`` clients' summed vectors (None below the
        threshold)."""
        self.forwarded = senders >= self.threshold
        self.senders = int(senders)
        self.batches = [self.senders] if self.forwarded else []
        return ExactSum(np.asarray(total, np.int64), self.senders) if self.forwarded else None

    def forward(self, messages: Iterable[Any]) -> Iterator[Any]:
        total: np.ndarray | None = None
        senders = 0
        for m in messages:
            if not isinstance(m, ClientBlock):
                raise DprecError(f"dpals' proxy sums ClientBlocks, got {type(m).__name__}")
            total = m.total.copy() if total is None else total + m.total
            senders += m.n_clients
        batch = None if total is None else self.forward_sum(total, senders)
        if batch is None:
            self.forwarded, self.batches = False, []
            return
        yield batch

    def account(self, event: Any) -> Any:
        """The event itself: one batch carries the round's whole noise."""
        if len(self.batches) != 1:
            raise DprecError(f"a secure-sum round must reach the server as one batch, got "
                             f"{len(self.batches)}: each batch would reveal its own sum")
        return event
