"""The server's round aggregator: it opens each share of the proxy's release, sums them mod
``q``, adds the proxy's mask sum, lifts the total to ``(-q/2, q/2]`` and unscales by
``gamma``.

It learns the sum and nothing else: each share is ``v - r mod q`` with ``r`` uniform and
unknown to it, so any set of shares short of all of them is uniform; only the complete
batch plus the mask sum gives ``sum v``.

Before a release, :meth:`SecureSumServer.check` gives a verdict on each share of the round
(no mask sum is involved: :mod:`.validity`), and keeps each valid share it opened, so the
proxy releases the mask sum and ids of the valid ones only (:meth:`SecureSumServer.sum_kept`
counts them first, then adds exactly its kept shares of those ids; the service path).
:meth:`SecureSumServer.aggregate` (the in-process release) counts the release's shares against
``[min_senders, max_senders]`` BEFORE it opens any (it never computes a sum it would
refuse), then refuses the whole release if one share fails
(wrong key, tampered, another round or role in the associated data, a repeated message id,
a wrong length or an out-of-range value): the mask sum covers every sender, so dropping a
share would leave a wrong sum, and asking the proxy for the mask sum of a subset would
reveal a second, different sum (docs/secure_sum.md, "One batch per round").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from dprec.protocol.secure_sum.errors import (
    BelowThresholdError,
    MalformedUploadError,
    OversizedUploadError,
    ReplayError,
    SecureSumError,
    WrongRoundError,
)
from dprec.protocol.secure_sum.messages import (
    MaskRelease,
    Release,
    ShareBatch,
    associated_data,
    run_id,
)
from dprec.protocol.secure_sum.params import SecureSumParams
from dprec.protocol.secure_sum.ring import centred, decode_elements
from dprec.protocol.secure_sum.sealed import KeyPair, open_box
from dprec.protocol.secure_sum.validity import KeptVerdicts, RingMembership, ShareCheck

__all__ = ["KeptShares", "SecureSumResult", "SecureSumServer", "check_shares"]

CHUNK = 1024
"""Shares decoded and summed at once."""

KeptShares = Callable[[list[bytes]], list[bytes | None]]
"""``message ids -> the opened share this server kept of each at the share check`` (None:
none kept)."""


@dataclasses.dataclass(frozen=True)
class SecureSumResult:
    """What the server learns from one round."""

    integer_sum: np.ndarray
    """``sum v`` over the contributors (``int64``): quantised values plus noise."""
    contributors: int
    """How many shares the sum covers."""
    gamma: float

    @property
    def estimate(self) -> np.ndarray:
        """``integer_sum / gamma``: the unscaled (noisy) sum of the clipped contributions."""
        return self.integer_sum / self.gamma


class SecureSumServer:
    """The server's side of the secure sum, for rounds with ``params``."""

    def __init__(self, params: SecureSumParams, keys: KeyPair,
                 checks: tuple[ShareCheck, ...] = (RingMembership(),)) -> None:
        self.params = params
        self.keys = keys
        self.checks = checks
        """The validity hooks run on each opened share (:mod:`.validity`)."""

    def check(self, batch: ShareBatch, round_id: int,
              kept: dict[bytes, bytes] | None = None) -> dict[bytes, str | None]:
        """A verdict per message id of ``batch`` (None: valid, else why it is refused): the
        box opens under this server's key for this round and message id, and passes every
        hook in :attr:`checks`. A message id repeated in the batch is refused. Each valid
        share's plaintext goes into ``kept`` (by message id), if given: what
        :meth:`sum_kept` adds at the release."""
        if batch.round_id != round_id:
            raise WrongRoundError(f"the share batch is for round {batch.round_id}, the server "
                                  f"checks round {round_id}")
        run = run_id(batch.proxy_key, self.keys.public)
        verdicts: dict[bytes, str | None] = {}
        for mid, box in batch.shares:
            if mid in verdicts:
                verdicts[mid] = "its message id is repeated in the round"
                continue
            verdicts[mid], plain = self._verdict(run, mid, box, round_id)
            if kept is not None and plain is not None:
                kept[mid] = plain
        if kept is not None:
            for mid, why in verdicts.items():
                if why is not None:
                    kept.pop(mid, None)
        return verdicts

    def _verdict(self, run: bytes, message_id: bytes, box: bytes, round_id: int
                 ) -> tuple[str | None, bytes | None]:
        """(None, the plaintext) for a valid share, else (why, None)."""
        try:
            plain = open_box(self.keys, box,
                             associated_data(run, round_id, message_id, "server"))
        except SecureSumError as e:
            return f"{type(e).__name__}: {e}", None
        for hook in self.checks:
            reason = hook(message_id, plain, self.params)
            if reason is not None:
                return f"{hook.name}: {reason}", None
        return None, plain

    def aggregate(self, release: Release, round_id: int, min_senders: int = 1,
                  max_senders: int | None = None) -> SecureSumResult:
        """The sum of round ``round_id`` from the proxy's release, or raise what is wrong;
        a release of fewer than ``min_senders`` or more than ``max_senders`` shares is
        refused before any share is opened."""
        p = self.params
        if release.round_id != round_id:
            raise WrongRoundError(f"the release is for round {release.round_id}, the server "
                                  f"aggregates round {round_id}")
        count = len(release.shares)
        if count < min_senders:
            raise BelowThresholdError(
                f"the release sums {count} clients, fewer than min_honest = {min_senders}: its "
                "noise is below the guarantee; refused unopened")
        if max_senders is not None and count > max_senders:
            raise OversizedUploadError(
                f"the release sums {count} clients, more than n_clients = {max_senders} (the "
                "ring q covers at most that many); refused unopened")
        mask_sum = np.asarray(release.mask_sum)
        if mask_sum.shape != (p.dimension,) or mask_sum.dtype != np.uint64:
            raise MalformedUploadError(f"the mask sum must be {p.dimension} uint64 values")
        ids = [mid for mid, _ in release.shares]
        if len(set(ids)) != len(ids):
            raise ReplayError("the release repeats a message id: a share counted twice would "
                              "change the sum; refused")
        run = run_id(release.proxy_key, self.keys.public)
        total = mask_sum.copy()
        for start in range(0, len(release.shares), CHUNK):
            chunk = release.shares[start:start + CHUNK]
            plain = b"".join(self._open(run, mid, box, round_id) for mid, box in chunk)
            total += decode_elements(plain, len(chunk), p.element_bytes, p.bits).sum(
                axis=0, dtype=np.uint64)
        return SecureSumResult(centred(total, p.bits), len(release.shares), p.gamma)

    def sum_kept(self, release: MaskRelease, round_id: int, min_senders: int,
                 max_senders: int, kept: KeptShares) -> SecureSumResult:
        """The sum of round ``round_id`` from the proxy's mask release: its count is checked
        against ``[min_senders, max_senders]`` and its ids for repeats first, then the
        shares this server kept at the share check of exactly those ids (``kept``, in
        chunks of :data:`CHUNK`) are added to the mask sum; the whole release is refused if
        one id is not a share it accepted (a missing share would leave a wrong sum)."""
        p = self.params
        if release.round_id != round_id:
            raise WrongRoundError(f"the release is for round {release.round_id}, the server "
                                  f"aggregates round {round_id}")
        count = len(release.ids)
        if count < min_senders:
            raise BelowThresholdError(
                f"the release sums {count} clients, fewer than min_honest = {min_senders}: its "
                "noise is below the guarantee; refused unopened")
        if count > max_senders:
            raise OversizedUploadError(
                f"the release sums {count} clients, more than n_clients = {max_senders} (the "
                "ring q covers at most that many); refused unopened")
        if len(set(release.ids)) != count:
            raise ReplayError("the release repeats a message id: a share counted twice would "
                              "change the sum; refused")
        if release.proxy_key == self.keys.public:
            raise SecureSumError("the release names this server's own key as the proxy's")
        total = np.asarray(release.mask_sum, dtype=np.uint64).copy()
        if total.shape != (p.dimension,):
            raise MalformedUploadError(f"the mask sum must be {p.dimension} uint64 values")
        for start in range(0, count, CHUNK):
            plains = kept(list(release.ids[start:start + CHUNK]))
            if any(s is None or len(s) != p.share_bytes for s in plains):
                raise SecureSumError("the release names an upload whose share this server "
                                     "did not accept; refused")
            total += decode_elements(b"".join(plains), len(plains), p.element_bytes,  # type: ignore[arg-type]
                                     p.bits).sum(axis=0, dtype=np.uint64)
        return SecureSumResult(centred(total, p.bits), count, p.gamma)

    def _open(self, run: bytes, message_id: bytes, box: bytes, round_id: int) -> bytes:
        plain = open_box(self.keys, box, associated_data(run, round_id, message_id, "server"))
        if len(plain) != self.params.share_bytes:
            error = OversizedUploadError if len(plain) > self.params.share_bytes \
                else MalformedUploadError
            raise error(f"a share has {self.params.share_bytes} bytes, got {len(plain)}: the "
                        "release is refused")
        return plain


def check_shares(params: SecureSumParams, keys: KeyPair | None, data: bytes, round_id: int
                 ) -> KeptVerdicts:
    """A server role's verdicts on the proxy's :class:`ShareBatch` bytes ``data`` of round
    ``round_id`` (:meth:`SecureSumServer.check`), with the opened share of each valid one
    to keep until the release; raises if the batch does not parse."""
    if keys is None:
        raise SecureSumError("the server has no key yet: start it first")
    kept: dict[bytes, bytes] = {}
    verdicts = SecureSumServer(params, keys).check(ShareBatch.from_bytes(data, params),
                                                   round_id, kept)
    return KeptVerdicts(verdicts, kept)
