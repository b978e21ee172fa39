"""The proxy's round aggregator: it accepts one upload per sender, opens only the mask seeds,
keeps ``sum r mod q`` over the accepted senders, and releases ONE batch per round once
``threshold`` distinct senders have contributed: the server shares in random order and the
mask sum over exactly those senders (:meth:`SecureSumProxy.release`, in process), or, for
the service proxy, the mask sum folded chunk by chunk and the senders' message ids only
(:meth:`SecureSumProxy.fold`, :meth:`SecureSumProxy.mask_release`).

What it sees: senders, sizes, message ids and the seeds (uniform, independent of the data).
What it refuses, before anything is counted: an upload of another round, a malformed or
oversized one, a repeated message id (a replay), a second upload of a sender, a seed box it
cannot open (wrong key or tampered), anything after the round's release. A release below the
threshold releases nothing and raises.

The order of the batch: canonical (sorted by message id) and then a uniform permutation, so
it depends on the set of uploads and the proxy's randomness only, never on arrival order. The
permutation comes from the OS CSPRNG (``random.SystemRandom``) unless a seeded
``numpy.random.Generator`` is passed (simulation only).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Collection

import numpy as np

from dprec.errors import check_int
from dprec.protocol.secure_sum.errors import (
    BelowThresholdError,
    DuplicateSenderError,
    ReplayError,
    RoundClosedError,
    WrongRoundError,
)
from dprec.protocol.secure_sum.messages import (
    MaskRelease,
    Release,
    ShareBatch,
    Upload,
    associated_data,
    run_id,
)
from dprec.protocol.secure_sum.params import SecureSumParams
from dprec.protocol.secure_sum.ring import expand_mask
from dprec.protocol.secure_sum.sealed import KeyPair, open_box

logger = logging.getLogger(__name__)

__all__ = ["SecureSumProxy"]


class SecureSumProxy:
    """One round of the secure sum at the proxy."""

    def __init__(self, params: SecureSumParams, keys: KeyPair, round_id: int, threshold: int,
                 rng: np.random.Generator | None = None, *, server_key: bytes) -> None:
        check_int("threshold", threshold, 2)
        check_int("round_id", round_id, 0)
        self.params = params
        self.keys = keys
        self.run = run_id(keys.public, server_key)
        """The run id the boxes bind (the server's key of this run, :func:`run_id`)."""
        self.round_id = round_id
        self.threshold = threshold
        self._rng = rng
        self._senders: set[str] = set()
        self._message_ids: set[bytes] = set()
        self._shares: dict[bytes, bytes] = {}
        """Message id -> share box."""
        self._seeds: dict[bytes, bytes] = {}
        """Message id -> mask seed (the mask sum is expanded at the release, over its set)."""
        self._released = False
        self._folded: list[bytes] = []
        """Message ids whose masks :meth:`fold` added to :attr:`_mask_sum`."""
        self._mask_sum = np.zeros(params.dimension, dtype=np.uint64)

    @property
    def senders(self) -> int:
        """Distinct senders accepted so far."""
        return len(self._senders)

    def submit(self, sender: str, data: bytes) -> None:
        """Accept ``sender``'s upload for this round, or raise the rule it breaks."""
        if self._released:
            raise RoundClosedError(f"round {self.round_id} already released its batch: send "
                                   "to the next round")
        upload = Upload.from_bytes(data, self.params)
        if upload.round_id != self.round_id:
            raise WrongRoundError(f"the upload is for round {upload.round_id}, this proxy "
                                  f"collects round {self.round_id}")
        if sender in self._senders:
            raise DuplicateSenderError(f"sender {sender!r} already uploaded in round "
                                       f"{self.round_id}: one upload per sender and round")
        if upload.message_id in self._message_ids:
            raise ReplayError(f"message id {upload.message_id.hex()} was already accepted in "
                              f"round {self.round_id}: a replay, refused")
        seed = open_box(self.keys, upload.seed_box,
                        associated_data(self.run, self.round_id, upload.message_id, "proxy"))
        self._senders.add(sender)
        self._message_ids.add(upload.message_id)
        self._seeds[upload.message_id] = seed
        self._shares[upload.message_id] = upload.share_box

    def share_batch(self, over: Collection[bytes] | None = None) -> ShareBatch:
        """Every accepted share (those with message ids ``over``, if given), sorted by
        message id, without a mask sum: what the server checks before the release
        (:mod:`.validity`)."""
        ids = self._shares if over is None else [m for m in over if m in self._shares]
        return ShareBatch(self.round_id, tuple(sorted((m, self._shares[m]) for m in ids)),
                          self.keys.public)

    def release(self, over: Collection[bytes] | None = None) -> Release:
        """The round's one batch over the accepted uploads with message ids ``over`` (all
        of them if None); raises below the threshold, for an id it did not accept, or after
        the first release."""
        if self._released:
            raise RoundClosedError(f"round {self.round_id} already released its one batch: a "
                                   "second batch would reveal the sum of a subset")
        ids = sorted(self._shares if over is None else set(over))
        unknown = [mid for mid in ids if mid not in self._shares]
        if unknown:
            raise ReplayError(f"{len(unknown)} message id(s) of the release were not accepted "
                              f"in round {self.round_id}: refused")
        if len(ids) < self.threshold:
            raise BelowThresholdError(
                f"round {self.round_id} has {len(ids)} distinct senders, fewer than "
                f"the threshold {self.threshold}: nothing released; wait for more clients")
        p = self.params
        mask_sum = np.zeros(p.dimension, dtype=np.uint64)
        for mid in ids:
            mask_sum += expand_mask(self._seeds[mid], p.dimension, p.bits)
        mask_sum &= np.uint64(p.modulus - 1)
        shares = [(mid, self._shares[mid]) for mid in ids]
        if self._rng is None:
            random.SystemRandom().shuffle(shares)
        else:
            shares = [shares[i] for i in self._rng.permutation(len(shares))]
        self._released = True
        logger.info("round %d: released %d shares", self.round_id, len(shares))
        return Release(self.round_id, tuple(shares), mask_sum, self.keys.public)

    def fold(self, over: Collection[bytes]) -> None:
        """Add the masks of the accepted uploads ``over`` (a checked chunk's agreed ones) to
        the round's running mask sum, then forget every seed and share box held so far
        (those not in ``over`` were refused): the streamed release
        (:meth:`mask_release`) holds one chunk at a time."""
        if self._released:
            raise RoundClosedError(f"round {self.round_id} already released its one batch")
        unknown = [mid for mid in over if mid not in self._seeds]
        if unknown or len(set(over)) != len(over):
            raise ReplayError(f"{len(unknown)} message id(s) to fold were not accepted (or "
                              f"were folded already, or repeat) in round {self.round_id}: refused")
        p = self.params
        for mid in sorted(over):
            self._mask_sum += expand_mask(self._seeds[mid], p.dimension, p.bits)
            self._mask_sum &= np.uint64(p.modulus - 1)
        self._folded.extend(over)
        self._seeds.clear()
        self._shares.clear()

    def mask_release(self) -> MaskRelease:
        """The round's one release over exactly the folded uploads: their mask sum and
        message ids (sorted), no share; raises below the threshold or after the first
        release."""
        if self._released:
            raise RoundClosedError(f"round {self.round_id} already released its one batch: a "
                                   "second batch would reveal the sum of a subset")
        if len(self._folded) < self.threshold:
            raise BelowThresholdError(
                f"round {self.round_id} has {len(self._folded)} agreed senders, fewer than "
                f"the threshold {self.threshold}: nothing released; wait for more clients")
        self._released = True
        logger.info("round %d: released the mask sum of %d uploads", self.round_id,
                    len(self._folded))
        return MaskRelease(self.round_id, tuple(sorted(self._folded)), self._mask_sum.copy(),
                           self.keys.public)
