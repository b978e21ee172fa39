"""The secure sum's messages: a client's upload (both sealed shares in one record, so a
client contributes both or neither) and the proxy's release (the in-process proxy's: the
server shares of one round, shuffled, with the sum of the matching masks; the service
proxy's: the mask sum and the agreed message ids only, the server holding the shares it
checked). Decoders check every length against the round's parameters before anything is
opened.

Upload:  "DSU1" | round id (u64 BE) | message id (16) | seed box (32 + 56) | share box
         (d * ceil(b/8) + 56)
Release: "DSR2" | round id (u64 BE) | count (u32 BE) | proxy key (32) | mask sum (d x u64 LE)
         | count x (message id (16) | share box)
Masks:   "DSR3" | round id (u64 BE) | count (u32 BE) | proxy key (32) | mask sum (d x u64 LE)
         | count x message id (16), sorted
Shares:  "DSC2" | round id (u64 BE) | count (u32 BE) | proxy key (32) |
         count x (message id (16) | share box)
         (what the proxy sends the server to check, before any mask sum leaves it)

Every sealed box binds the run (:func:`run_id`: a digest of the proxy's and the server's
public keys; the server draws a fresh key pair at each start), the round, the message id
and the recipient's role (:func:`associated_data`), so a box replayed into another run,
round, message or role fails its tag. The release and the share batch carry the proxy's
public key, from which the server recomputes the run id (a proxy naming another key only
makes every share fail).
"""

from __future__ import annotations

import dataclasses
import hashlib
import struct

import numpy as np

from dprec.protocol.secure_sum.errors import MalformedUploadError, OversizedUploadError
from dprec.protocol.secure_sum.params import SecureSumParams
from dprec.protocol.secure_sum.ring import SEED_BYTES
from dprec.protocol.secure_sum.sealed import KEY_BYTES, OVERHEAD

__all__ = ["MESSAGE_ID_BYTES", "ROLES", "RUN_ID_BYTES", "MaskRelease", "Release", "ShareBatch",
           "Upload", "associated_data", "run_id"]

MESSAGE_ID_BYTES = 16
ROLES = ("proxy", "server")
_UPLOAD = b"DSU1"
_RELEASE = b"DSR2"
_SHARES = b"DSC2"
_MASKS = b"DSR3"
_HEAD = struct.Struct(">4sQ16s")
_RELEASE_HEAD = struct.Struct(f">4sQI{KEY_BYTES}s")
RELEASE_HEAD_BYTES = _RELEASE_HEAD.size
"""Bytes of a release's (and a share batch's) head: label, round, count, proxy key."""
SEED_BOX_BYTES = SEED_BYTES + OVERHEAD
RUN_ID_BYTES = 16
_RUN_LABEL = b"dprec secure-sum run v1|"


def run_id(proxy_key: bytes, server_key: bytes) -> bytes:
    """The run's id: ``SHA-256(label | proxy key | server key)[:16]``. The server's key pair
    is drawn at each start, so two runs never share it."""
    if len(proxy_key) != KEY_BYTES or len(server_key) != KEY_BYTES:
        raise MalformedUploadError(f"a run id binds two {KEY_BYTES}-byte public keys")
    return hashlib.sha256(_RUN_LABEL + proxy_key + server_key).digest()[:RUN_ID_BYTES]


def associated_data(run: bytes, round_id: int, message_id: bytes, role: str) -> bytes:
    """What a sealed box binds: protocol label, run id (:func:`run_id`), round id, message
    id, recipient role."""
    if role not in ROLES:
        raise MalformedUploadError(f"role must be one of {ROLES}, got {role!r}")
    if len(run) != RUN_ID_BYTES:
        raise MalformedUploadError(f"a run id has {RUN_ID_BYTES} bytes, got {len(run)}")
    return (b"dprec secure-sum v2|" + run + struct.pack(">Q", round_id) + message_id
            + role.encode())


def _share_box_bytes(params: SecureSumParams) -> int:
    return params.share_bytes + OVERHEAD


@dataclasses.dataclass(frozen=True)
class Upload:
    """One client's contribution to one round."""

    round_id: int
    message_id: bytes
    seed_box: bytes
    """The 32-byte mask seed sealed to the proxy."""
    share_box: bytes
    """The share ``s = v - r mod q`` sealed to the server."""

    def to_bytes(self) -> bytes:
        return _HEAD.pack(_UPLOAD, self.round_id, self.message_id) + self.seed_box \
            + self.share_box

    @classmethod
    def size(cls, params: SecureSumParams) -> int:
        """Bytes of every upload of a round with ``params``."""
        return _HEAD.size + SEED_BOX_BYTES + _share_box_bytes(params)

    @classmethod
    def from_bytes(cls, data: bytes, params: SecureSumParams) -> Upload:
        """Parse, refusing any length but :meth:`size`'s (longer: ``OversizedUploadError``)."""
        expected = cls.size(params)
        if len(data) > expected:
            raise OversizedUploadError(
                f"an upload of this round has {expected} bytes, got {len(data)}: refused")
        if len(data) < expected or data[:4] != _UPLOAD:
            raise MalformedUploadError(
                f"not an upload of this round (expected {expected} bytes starting "
                f"{_UPLOAD!r}, got {len(data)} bytes starting {bytes(data[:4])!r})")
        _, round_id, message_id = _HEAD.unpack_from(data)
        body = data[_HEAD.size:]
        return cls(round_id, message_id, body[:SEED_BOX_BYTES], body[SEED_BOX_BYTES:])


def _share_items(data: bytes, start: int, count: int, params: SecureSumParams
                 ) -> tuple[tuple[bytes, bytes], ...]:
    item = MESSAGE_ID_BYTES + _share_box_bytes(params)
    return tuple((data[o:o + MESSAGE_ID_BYTES], data[o + MESSAGE_ID_BYTES:o + item])
                 for o in range(start, start + count * item, item))


@dataclasses.dataclass(frozen=True)
class Release:
    """The proxy's one batch of a round: server shares in random order, no senders."""

    round_id: int
    shares: tuple[tuple[bytes, bytes], ...]
    """``(message id, share box)`` pairs in the proxy's shuffled order."""
    mask_sum: np.ndarray
    """``sum r mod q`` over exactly the senders of :attr:`shares` (``uint64``)."""
    proxy_key: bytes
    """The proxy's public key (the server binds the run id from it)."""

    def to_bytes(self) -> bytes:
        head = _RELEASE_HEAD.pack(_RELEASE, self.round_id, len(self.shares), self.proxy_key)
        body = b"".join(mid + box for mid, box in self.shares)
        return head + np.ascontiguousarray(self.mask_sum, dtype="<u8").tobytes() + body

    @classmethod
    def from_bytes(cls, data: bytes, params: SecureSumParams) -> Release:
        """Parse, checking the length that the count and ``params`` fix."""
        if len(data) < _RELEASE_HEAD.size or data[:4] != _RELEASE:
            raise MalformedUploadError("not a secure-sum release")
        _, round_id, count, proxy_key = _RELEASE_HEAD.unpack_from(data)
        item = MESSAGE_ID_BYTES + _share_box_bytes(params)
        mask_end = _RELEASE_HEAD.size + 8 * params.dimension
        expected = mask_end + count * item
        if len(data) != expected:
            error = OversizedUploadError if len(data) > expected else MalformedUploadError
            raise error(f"a release of {count} shares has {expected} bytes, got {len(data)}")
        mask_sum = np.frombuffer(data[_RELEASE_HEAD.size:mask_end], dtype="<u8").copy()
        return cls(round_id, _share_items(data, mask_end, count, params), mask_sum, proxy_key)


@dataclasses.dataclass(frozen=True)
class ShareBatch:
    """The server shares of a round's held uploads, WITHOUT a mask sum: what the proxy hands
    the server to check (:meth:`~dprec.protocol.secure_sum.server.SecureSumServer.check`)
    before it releases anything. Each share is one-time padded by a mask only the proxy can
    expand, so opening it tells the server nothing about the client's vector."""

    round_id: int
    shares: tuple[tuple[bytes, bytes], ...]
    """``(message id, share box)`` pairs, sorted by message id."""
    proxy_key: bytes
    """The proxy's public key (the server binds the run id from it)."""

    def to_bytes(self) -> bytes:
        head = _RELEASE_HEAD.pack(_SHARES, self.round_id, len(self.shares), self.proxy_key)
        return head + b"".join(mid + box for mid, box in self.shares)

    @classmethod
    def from_bytes(cls, data: bytes, params: SecureSumParams) -> ShareBatch:
        """Parse, checking the length that the count and ``params`` fix."""
        if len(data) < _RELEASE_HEAD.size or data[:4] != _SHARES:
            raise MalformedUploadError("not a secure-sum share batch")
        _, round_id, count, proxy_key = _RELEASE_HEAD.unpack_from(data)
        expected = _RELEASE_HEAD.size + count * (MESSAGE_ID_BYTES + _share_box_bytes(params))
        if len(data) != expected:
            error = OversizedUploadError if len(data) > expected else MalformedUploadError
            raise error(f"a batch of {count} shares has {expected} bytes, got {len(data)}")
        return cls(round_id, _share_items(data, _RELEASE_HEAD.size, count, params), proxy_key)


@dataclasses.dataclass(frozen=True)
class MaskRelease:
    """The service proxy's one release of a round: the mask sum over exactly the uploads
    ``ids`` (their message ids), no share. The server adds the shares of those ids that it
    opened and kept at the share check (:meth:`~dprec.protocol.secure_sum.server.
    SecureSumServer.sum_kept`), so the release grows by one id per upload, not by a share."""

    round_id: int
    ids: tuple[bytes, ...]
    mask_sum: np.ndarray
    """``sum r mod q`` over exactly the uploads :attr:`ids` (``uint64``)."""
    proxy_key: bytes

    @staticmethod
    def size(params: SecureSumParams, count: int) -> int:
        """Bytes of a release of ``count`` uploads."""
        return _RELEASE_HEAD.size + 8 * params.dimension + count * MESSAGE_ID_BYTES

    def to_bytes(self) -> bytes:
        head = _RELEASE_HEAD.pack(_MASKS, self.round_id, len(self.ids), self.proxy_key)
        return head + np.ascontiguousarray(self.mask_sum, dtype="<u8").tobytes() \
            + b"".join(self.ids)

    @classmethod
    def from_bytes(cls, data: bytes, params: SecureSumParams) -> MaskRelease:
        """Parse, checking the length that the count and ``params`` fix."""
        if len(data) < _RELEASE_HEAD.size or data[:4] != _MASKS:
            raise MalformedUploadError("not a secure-sum mask release")
        _, round_id, count, proxy_key = _RELEASE_HEAD.unpack_from(data)
        expected = cls.size(params, count)
        if len(data) != expected:
            error = OversizedUploadError if len(data) > expected else MalformedUploadError
            raise error(f"a mask release of {count} uploads has {expected} bytes, got "
                        f"{len(data)}")
        mask_end = _RELEASE_HEAD.size + 8 * params.dimension
        mask_sum = np.frombuffer(data[_RELEASE_HEAD.size:mask_end], dtype="<u8").copy()
        ids = tuple(data[o:o + MESSAGE_ID_BYTES]
                    for o in range(mask_end, len(data), MESSAGE_ID_BYTES))
        return cls(round_id, ids, mask_sum, proxy_key)
