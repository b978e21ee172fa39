"""The secure sum's messages: a client's upload (both sealed shares in one record, so a
client contributes both or neither) and the proxy's release (the server shares of one round,
shuffled, with the sum of the matching masks). Decoders check every length against the
round's parameters before anything is opened.

Upload:  "DSU1" | round id (u64 BE) | message id (16) | seed box (32 + 56) | share box
         (d * ceil(b/8) + 56)
Release: "DSR1" | round id (u64 BE) | count (u32 BE) | mask sum (d x u64 LE) |
         count x (message id (16) | share box)
Shares:  "DSC1" | round id (u64 BE) | count (u32 BE) | count x (message id (16) | share box)
         (what the proxy sends the server to check, before any mask sum leaves it)
"""

from __future__ import annotations

import dataclasses
import struct

import numpy as np

from dprec.protocol.secure_sum.errors import MalformedUploadError, OversizedUploadError
from dprec.protocol.secure_sum.params import SecureSumParams
from dprec.protocol.secure_sum.ring import SEED_BYTES
from dprec.protocol.secure_sum.sealed import OVERHEAD

__all__ = ["MESSAGE_ID_BYTES", "ROLES", "Release", "ShareBatch", "Upload", "associated_data"]

MESSAGE_ID_BYTES = 16
ROLES = ("proxy", "server")
_UPLOAD = b"DSU1"
_RELEASE = b"DSR1"
_SHARES = b"DSC1"
_HEAD = struct.Struct(">4sQ16s")
_RELEASE_HEAD = struct.Struct(">4sQI")
SEED_BOX_BYTES = SEED_BYTES + OVERHEAD


def associated_data(round_id: int, message_id: bytes, role: str) -> bytes:
    """What a sealed box binds: protocol label, round id, message id, recipient role."""
    if role not in ROLES:
        raise MalformedUploadError(f"role must be one of {ROLES}, got {role!r}")
    return b"dprec secure-sum v1|" + struct.pack(">Q", round_id) + message_id + role.encode()


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


@dataclasses.dataclass(frozen=True)
class Release:
    """The proxy's one batch of a round: server shares in random order, no senders."""

    round_id: int
    shares: tuple[tuple[bytes, bytes], ...]
    """``(message id, share box)`` pairs in the proxy's shuffled order."""
    mask_sum: np.ndarray
    """``sum r mod q`` over exactly the senders of :attr:`shares` (``uint64``)."""

    def to_bytes(self) -> bytes:
        head = _RELEASE_HEAD.pack(_RELEASE, self.round_id, len(self.shares))
        body = b"".join(mid + box for mid, box in self.shares)
        return head + np.ascontiguousarray(self.mask_sum, dtype="<u8").tobytes() + body

    @classmethod
    def from_bytes(cls, data: bytes, params: SecureSumParams) -> Release:
        """Parse, checking the length that the count and ``params`` fix."""
        if len(data) < _RELEASE_HEAD.size or data[:4] != _RELEASE:
            raise MalformedUploadError("not a secure-sum release")
        _, round_id, count = _RELEASE_HEAD.unpack_from(data)
        item = MESSAGE_ID_BYTES + _share_box_bytes(params)
        mask_end = _RELEASE_HEAD.size + 8 * params.dimension
        expected = mask_end + count * item
        if len(data) != expected:
            error = OversizedUploadError if len(data) > expected else MalformedUploadError
            raise error(f"a release of {count} shares has {expected} bytes, got {len(data)}")
        mask_sum = np.frombuffer(data[_RELEASE_HEAD.size:mask_end], dtype="<u8").copy()
        shares = tuple((data[o:o + MESSAGE_ID_BYTES], data[o + MESSAGE_ID_BYTES:o + item])
                       for o in range(mask_end, expected, item))
        return cls(round_id, shares, mask_sum)


def _share_items(data: bytes, start: int, count: int, params: SecureSumParams
                 ) -> tuple[tuple[bytes, bytes], ...]:
    item = MESSAGE_ID_BYTES + _share_box_bytes(params)
    return tuple((data[o:o + MESSAGE_ID_BYTES], data[o + MESSAGE_ID_BYTES:o + item])
                 for o in range(start, start + count * item, item))


@dataclasses.dataclass(frozen=True)
class ShareBatch:
    """The server shares of a round's held uploads, WITHOUT a mask sum: what the proxy hands
    the server to check (:meth:`~dprec.protocol.secure_sum.server.SecureSumServer.check`)
    before it releases anything. Each share is one-time padded by a mask only the proxy can
    expand, so opening it tells the server nothing about the client's vector."""

    round_id: int
    shares: tuple[tuple[bytes, bytes], ...]
    """``(message id, share box)`` pairs, sorted by message id."""

    def to_bytes(self) -> bytes:
        head = _RELEASE_HEAD.pack(_SHARES, self.round_id, len(self.shares))
        return head + b"".join(mid + box for mid, box in self.shares)

    @classmethod
    def from_bytes(cls, data: bytes, params: SecureSumParams) -> ShareBatch:
        """Parse, checking the length that the count and ``params`` fix."""
        if len(data) < _RELEASE_HEAD.size or data[:4] != _SHARES:
            raise MalformedUploadError("not a secure-sum share batch")
        _, round_id, count = _RELEASE_HEAD.unpack_from(data)
        expected = _RELEASE_HEAD.size + count * (MESSAGE_ID_BYTES + _share_box_bytes(params))
        if len(data) != expected:
            error = OversizedUploadError if len(data) > expected else MalformedUploadError
            raise error(f"a batch of {count} shares has {expected} bytes, got {len(data)}")
        return cls(round_id, _share_items(data, _RELEASE_HEAD.size, count, params))
