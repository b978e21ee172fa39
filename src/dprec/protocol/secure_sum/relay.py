"""The service proxy's secret part of a secure sum, for every secure-sum system
(:class:`SecureSumRelay`, what ``dprec serve proxy`` runs through the descriptor): its key
(:func:`proxy_keys`), the check of every upload, the verdicts and share batch the server
checks, and ONE release per round over exactly the agreed uploads, only once ``threshold``
(at least ``min_honest``) distinct clients contributed: fewer honest shares than
``min_honest`` would carry less noise than the guarantee is calibrated for, and a second
batch would reveal the sum of a subset (docs/secure_sum.md, "One batch per round").
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dprec.errors import DprecError
from dprec.protocol.deployment import ProxySecrets
from dprec.protocol.messages import Message, MessageError
from dprec.protocol.secure_sum.errors import BelowThresholdError, SecureSumError
from dprec.protocol.secure_sum.messages import Upload, associated_data, run_id
from dprec.protocol.secure_sum.params import SecureSumParams
from dprec.protocol.secure_sum.proxy import SecureSumProxy
from dprec.protocol.secure_sum.published import PUBLISHED_KEY
from dprec.protocol.secure_sum.sealed import KEY_BYTES, KeyPair, open_box
from dprec.protocol.secure_sum.wire import SumRelease, SumUpload

__all__ = ["KEY_FILE", "SecureSumRelay", "broadcast_key", "proxy_keys"]

KEY_FILE = "secure_sum_proxy.key"
"""The proxy's X25519 private key in its state folder (raw, mode 0600)."""


def proxy_keys(state_dir: Path) -> KeyPair:
    """The proxy's key pair, kept in ``state_dir``: made from the OS CSPRNG on first use,
    read back on every restart (uploads acknowledged before a crash stay openable)."""
    path = Path(state_dir) / KEY_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raw = path.read_bytes()
        if len(raw) != KEY_BYTES:
            raise DprecError(f"{path} does not hold a {KEY_BYTES}-byte X25519 key; restore "
                             "it from a backup (the round's uploads are sealed to it)") from None
        return KeyPair.from_raw(raw)
    keys = KeyPair()
    with os.fdopen(fd, "wb") as f:
        f.write(keys.private_raw())
        f.flush()
        os.fsync(f.fileno())
    return keys


class SecureSumRelay(ProxySecrets):
    """The service proxy's part of the secure sum: its key, the check of every upload
    (its seed box must open under this key for this round, with the round's parameters),
    its verdicts and the share batch the server checks, and the round's release over
    exactly the agreed uploads: the sum of their masks, folded chunk by chunk from the held
    uploads (:meth:`fold`), and their message ids, never a share (the server sums the
    shares it kept at its check; :mod:`dprec.protocol.secure_sum.validity`).

    ``params``: the secure-sum parameters of every round (dp-pop, dp-fedavg), or the
    function ``round -> parameters`` (dpals, whose rounds differ in length); a round it
    refuses with a :class:`~dprec.errors.DprecError` is refused as a bad message.
    ``min_honest`` and ``n_clients``: the published protocol's (:meth:`release_bounds`).
    ``server_key_of``: the server's public key in its broadcast, which the proxy fetches
    (:meth:`see_broadcast`; default :func:`broadcast_key`): every box binds the run id of
    both keys.
    """

    agrees_release = True
    needs_broadcast = True

    def __init__(self, params: SecureSumParams | Callable[[int], SecureSumParams],
                 state_dir: Path, min_honest: int = 2, n_clients: int = 1 << 31,
                 server_key_of: Callable[[bytes], bytes] | None = None) -> None:
        self.params_of: Callable[[int], SecureSumParams] = (
            (lambda _round: params) if isinstance(params, SecureSumParams) else params)
        self.keys = proxy_keys(state_dir)
        self.min_honest = int(min_honest)
        self.n_clients = int(n_clients)
        self.server_key_of = server_key_of or broadcast_key
        self.server_key: bytes | None = None
        """The server's public key of this run (from its broadcast)."""
        self._open: dict[int, tuple[SecureSumProxy, dict[bytes, str | None]]] = {}
        """The round being closed: its aggregator (the seeds it opened, once each) and the
        verdict on every upload it was given."""

    def see_broadcast(self, round: int, body: bytes) -> None:
        """The server's key, from the broadcast clients of ``round`` seal to."""
        try:
            key = bytes(self.server_key_of(body))
            run_id(self.keys.public, key)  # 32 bytes
        except (MessageError, SecureSumError) as e:
            raise SecureSumError(f"the server's broadcast holds no usable key: {e}") from None
        self.server_key = key

    def _run(self) -> bytes:
        if self.server_key is None:
            raise MessageError("the proxy has not seen the server's key yet; retry")
        return run_id(self.keys.public, self.server_key)

    def published(self) -> dict[str, Any]:
        return {PUBLISHED_KEY: self.keys.public.hex()}

    def release_bounds(self) -> tuple[int, int]:
        return self.min_honest, self.n_clients

    def _params(self, round: int) -> SecureSumParams:
        try:
            return self.params_of(round)
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
                     associated_data(self._run(), round, upload.message_id, "proxy"))
        except SecureSumError as e:
            raise MessageError(str(e)) from None

    def message_id(self, row: bytes) -> bytes:
        return SumUpload.from_bytes(row).message_id

    def begin_release(self, round: int) -> None:
        """Start ``round``'s agreement afresh (and forget any other round's opened seeds)."""
        self._open = {}

    def _aggregator(self, rows: list[bytes], round: int
                    ) -> tuple[SecureSumProxy, dict[bytes, str | None]]:
        """The round's aggregator (kept across the close's chunks, so each seed box is
        opened once per close), with every row of ``rows`` submitted, and its verdict on
        each."""
        self._run()
        assert self.server_key is not None
        if round not in self._open:
            self._open = {round: (SecureSumProxy(self._params(round), self.keys, round, 2,
                                                 server_key=self.server_key), {})}
        agg, verdicts = self._open[round]
        out: dict[bytes, str | None] = {}
        for row in rows:
            message = SumUpload.from_bytes(row)
            mid = message.message_id
            if mid not in verdicts:
                try:
                    agg.submit(mid.hex(), message.data)
                    verdicts[mid] = None
                except SecureSumError as e:
                    verdicts[mid] = f"{type(e).__name__}: {e}"
            out[mid] = verdicts[mid]
        return agg, out

    def verdicts(self, rows: list[bytes], round: int) -> dict[bytes, str | None]:
        return self._aggregator(rows, round)[1]

    def share_batch(self, rows: list[bytes], round: int) -> bytes:
        agg, verdicts = self._aggregator(rows, round)
        return agg.share_batch(verdicts).to_bytes()

    def fold(self, ids: list[bytes], round: int) -> None:
        """Add the masks of the agreed uploads ``ids`` (of the chunk just checked) to the
        round's running mask sum, and forget the chunk's seeds and share boxes."""
        agg, _ = self._aggregator([], round)
        try:
            agg.fold(ids)
        except SecureSumError as e:
            raise DprecError(f"the release's fold is refused: {e}") from None

    def folded_release(self, ids: list[bytes], round: int) -> bytes:
        """The round's one release: the folded mask sum over exactly ``ids`` and those ids
        (:class:`~dprec.protocol.secure_sum.messages.MaskRelease`), no share: the server
        sums the shares it kept at the share check."""
        agg, _ = self._aggregator([], round)
        try:
            agg.threshold = max(2, len(ids))
            release = agg.mask_release()
            if set(release.ids) != set(ids):
                raise DprecError(f"the folded uploads of round {round} are not the agreed "
                                 "set; nothing released")
            return SumRelease(release.to_bytes()).to_bytes()
        except SecureSumError as e:
            raise DprecError(str(e)) from None
        finally:
            self._open.pop(round, None)

    def release(self, rows: list[bytes], round: int, threshold: int) -> bytes:
        """The release over all of ``rows`` at once (each must open on this side), at least
        ``threshold`` of them."""
        self.begin_release(round)
        _, verdicts = self._aggregator(rows, round)
        bad = {mid: why for mid, why in verdicts.items() if why is not None}
        if bad:
            raise DprecError(f"{len(bad)} upload(s) of the release do not open: "
                             f"{next(iter(bad.values()))}")
        if len(verdicts) < max(2, int(threshold)):
            raise BelowThresholdError(f"round {round} has {len(verdicts)} uploads, fewer than "
                                      f"the threshold {threshold}: nothing released")
        ids = list(verdicts)
        self.fold(ids, round)
        return self.folded_release(ids, round)


def broadcast_key(body: bytes) -> bytes:
    """The server's public key in its broadcast: the ``server_key`` of any secure-sum
    system's model message (:class:`MessageError` for a message without one)."""
    model = Message.from_bytes(body)
    key = getattr(model, "server_key", None)
    if not isinstance(key, bytes):
        raise MessageError(f"a {type(model).__name__} holds no server key")
    return key
