"""The secure sum's proxy part when every upload carries a validity proof (``validity=prio3``):
the proxy is Prio3's Helper (:mod:`dprec.protocol.secure_sum.proved`).

At the close (:func:`dprec.services.rounds.settle_round`), one chunk of held uploads at a
time: :meth:`ProvedRelay.verdicts` opens each upload's helper box and computes its
verifier share under the round's verify key; :meth:`share_batch` sends the server the
reports with those shares and the sealed verify key; :meth:`confirm` decides each report
the server calls valid from the server's verifier share (a server that lies about a
verdict can only remove reports, which the release rule bounds); :meth:`fold` adds the
output shares of the chunk's agreed reports to the round's running aggregate share and
forgets the chunk. :meth:`folded_release` then sends that aggregate share with the agreed
message ids, once: the proxy never holds more than one chunk's verify states.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from dprec.errors import DprecError
from dprec.protocol.messages import Message, MessageError
from dprec.protocol.secure_sum.checks import check_terms
from dprec.protocol.secure_sum.errors import SecureSumError
from dprec.protocol.secure_sum.params import SecureSumParams
from dprec.protocol.secure_sum.proved import (
    ProvedBatch,
    ProvedRelease,
    ProvedUpload,
    bound_data,
    fold_outputs,
    proxy_confirm,
    proxy_prepare,
    seal_verify_key,
    verify_key,
)
from dprec.protocol.secure_sum.relay import SecureSumRelay
from dprec.protocol.secure_sum.sealed import open_box
from dprec.protocol.secure_sum.vdaf.contribution import ContributionCheck
from dprec.protocol.secure_sum.wire import SumRelease, SumUpload

__all__ = ["ProvedRelay"]


class ProvedRelay(SecureSumRelay):
    """The service proxy's part of a proved secure sum (module docstring)."""

    def __init__(self, check: ContributionCheck, params: SecureSumParams, state_dir: Path,
                 min_honest: int, n_clients: int, server_key_of: Callable[[bytes], bytes]
                 ) -> None:
        super().__init__(params, state_dir, min_honest, n_clients, server_key_of)
        self.check = check
        self._prepared: dict[int, dict[bytes, tuple[Any, bytes]]] = {}
        """Round -> message id -> (Helper state, Helper verifier share) of the chunk being
        checked; the uploads themselves stay in the held rows (not copied)."""
        self._folded: dict[int, np.ndarray] = {}
        """Round -> the proxy's aggregate share of the reports folded so far."""

    def published(self) -> dict[str, Any]:
        return {**super().published(), "validity": {"kind": "prio3",
                                                    **check_terms(self.check)}}

    def _upload(self, message: Message | bytes, round: int) -> ProvedUpload:
        msg = message if isinstance(message, SumUpload) else SumUpload.from_bytes(message)
        upload = ProvedUpload.from_bytes(msg.data, self.check)
        if upload.round_id != round:
            raise MessageError(f"the upload is sealed for round {upload.round_id}, this is "
                               f"round {round}: refused")
        return upload

    def admit(self, message: Message, round: int) -> None:
        if not isinstance(message, SumUpload):
            raise MessageError(f"expected a SumUpload, got {type(message).__name__}")
        try:
            upload = self._upload(message, round)
            open_box(self.keys, upload.helper_box,
                     bound_data(self._run(), round, upload.message_id, "proxy",
                                upload.public_share))
        except SecureSumError as e:
            raise MessageError(str(e)) from None

    def verdicts(self, rows: list[bytes], round: int) -> dict[bytes, str | None]:
        run = self._run()
        key = verify_key(self.keys, run, round)
        prepared: dict[bytes, tuple[Any, bytes]] = {}
        out: dict[bytes, str | None] = {}
        for row in rows:
            mid = self.message_id(row)
            if mid in out:
                out[mid] = "its message id is repeated in the round"
                prepared.pop(mid, None)
                continue
            try:
                upload = self._upload(row, round)
                state, share = proxy_prepare(self.check, self.keys, run, upload, key)
            except (SecureSumError, MessageError, ValueError) as e:
                out[mid] = f"{type(e).__name__}: {e}"
                continue
            prepared[mid] = (state, share)
            out[mid] = None
        self._prepared[round] = prepared
        return out

    def _ready(self, rows: list[bytes], round: int) -> list[tuple[Any, bytes]]:
        prepared = self._prepared.get(round, {})
        if any(self.message_id(r) not in prepared for r in rows):
            self.verdicts(rows, round)
            prepared = self._prepared[round]
        missing = [r for r in rows if self.message_id(r) not in prepared]
        if missing:
            raise DprecError(f"{len(missing)} upload(s) of the release do not verify")
        return [prepared[self.message_id(r)] for r in rows]

    def _batch(self, rows: list[bytes], round: int) -> ProvedBatch:
        run = self._run()
        assert self.server_key is not None
        box = seal_verify_key(self.server_key, run, round, verify_key(self.keys, run, round))
        items = tuple((u.message_id, u.public_share, u.leader_box, vs)
                      for u, (_, vs) in zip((self._upload(r, round) for r in rows),
                                            self._ready(rows, round), strict=True))
        return ProvedBatch(round, self.keys.public, box, items)

    def share_batch(self, rows: list[bytes], round: int) -> bytes:
        return self._batch(rows, round).to_bytes()

    def confirm(self, verdicts: dict[bytes, str | None], answer: Mapping[str, Any],
                round: int) -> dict[bytes, str | None]:
        """Each report the server accepts is accepted here too only if the joint decision
        from the server's verifier share (``answer["verifier_shares"]``) passes."""
        raw = answer.get("verifier_shares")
        shares = raw if isinstance(raw, dict) else {}
        prepared = self._prepared.get(round, {})
        out = dict(verdicts)
        for mid, why in verdicts.items():
            if why is not None:
                continue
            if mid not in prepared:
                out[mid] = "the proxy holds no verified share of it"
                continue
            try:
                leader = bytes.fromhex(shares[mid.hex()]) if mid.hex() in shares else None
            except (TypeError, ValueError):
                leader = None
            state, helper = prepared[mid]
            reason = proxy_confirm(self.check, state, helper, leader)
            if reason is not None:
                out[mid] = f"the proxy's joint check refutes the server's verdict: {reason}"
        return out

    def begin_release(self, round: int) -> None:
        """Start the round's aggregate share afresh (a settle that restarts folds again)."""
        self._folded.pop(round, None)
        self._prepared.pop(round, None)

    def fold(self, ids: list[bytes], round: int) -> None:
        """Add the output shares of the agreed reports ``ids`` (of the chunk just checked)
        to the round's aggregate share, and forget the chunk's verify states."""
        prepared = self._prepared.pop(round, {})
        missing = [mid for mid in ids if mid not in prepared]
        if missing:
            raise DprecError(f"{len(missing)} agreed upload(s) were not verified here")
        if ids:
            self._folded[round] = fold_outputs(self.check, self._folded.get(round),
                                               [prepared[mid][0].out_share for mid in ids])

    def folded_release(self, ids: list[bytes], round: int) -> bytes:
        """The round's one release: the folded aggregate share over exactly ``ids``."""
        total = self._folded.pop(round, None)
        if total is None:
            total = fold_outputs(self.check, None, [])
        field = self.check.vdaf.field
        body = ProvedRelease(round, self.keys.public, field.encode(total), tuple(ids))
        return SumRelease(body.to_bytes()).to_bytes()

    def release(self, rows: list[bytes], round: int, threshold: int) -> bytes:
        """The release over all of ``rows`` at once (each must verify on this side)."""
        self.begin_release(round)
        ids = [self.message_id(r) for r in rows]
        self._ready(rows, round)
        self.fold(ids, round)
        return self.folded_release(ids, round)
