"""Arithmetic in ``Z_q^d`` with ``q = 2^b``: masks from a seed, the wire encoding of a
vector, and the centred lift.

With ``q`` a power of two, ``uint64`` arithmetic wraps mod ``2^64``, a multiple of ``q``, so
any sum or difference of ``uint64`` vectors followed by ``& (q - 1)`` is exact mod ``q``.

The mask ``r`` of a client is the ChaCha20 keystream (``cryptography``, RFC 7539 block
function, zero nonce and counter: each seed is fresh and used once) under a 32-byte seed,
read as little-endian ``uint64`` words and reduced by the mask ``q - 1``: uniform on
``Z_q^d`` up to ChaCha20's pseudorandomness, since ``q`` divides ``2^64``.
"""

from __future__ import annotations

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

from dprec.protocol.secure_sum.errors import MalformedUploadError

__all__ = ["SEED_BYTES", "centred", "decode_elements", "encode_elements", "expand_mask"]

SEED_BYTES = 32
_NONCE = bytes(16)


def expand_mask(seed: bytes, dimension: int, bits: int) -> np.ndarray:
    """``r`` in ``Z_{2^bits}^dimension`` (``uint64``) expanded from a 32-byte ``seed``."""
    if len(seed) != SEED_BYTES:
        raise MalformedUploadError(f"a mask seed has {SEED_BYTES} bytes, got {len(seed)}")
    stream = Cipher(algorithms.ChaCha20(seed, _NONCE), mode=None).encryptor().update(
        bytes(8 * dimension))
    return np.frombuffer(stream, dtype="<u8") & np.uint64((1 << bits) - 1)


def encode_elements(values: np.ndarray, element_bytes: int) -> bytes:
    """The ``uint64`` vector ``values`` (each ``< 2^(8 element_bytes)``) as little-endian
    ``element_bytes``-byte integers."""
    words = np.ascontiguousarray(values, dtype="<u8").view(np.uint8).reshape(-1, 8)
    return words[:, :element_bytes].tobytes()


def decode_elements(data: bytes, count: int, element_bytes: int, bits: int) -> np.ndarray:
    """Inverse of :func:`encode_elements` for ``count`` rows of vectors stored back to back:
    a ``(count, d)`` ``uint64`` array. Raises if the length or a value (``>= 2^bits``) is not
    that of a share of the round."""
    if count == 0 or len(data) % (count * element_bytes):
        raise MalformedUploadError(
            f"a share has a multiple of {element_bytes} bytes per coordinate, got {len(data)} "
            f"bytes for {count} share(s)")
    raw = np.frombuffer(data, dtype=np.uint8).reshape(count, -1, element_bytes)
    words = np.zeros(raw.shape[:2] + (8,), dtype=np.uint8)
    words[..., :element_bytes] = raw
    values = words.view("<u8")[..., 0]
    if bits < 64 and (values >> np.uint64(bits)).any():
        raise MalformedUploadError(f"a share holds a value >= 2^{bits}: it is not an element "
                                   "of the round's ring; drop it")
    return values


def centred(total: np.ndarray, bits: int) -> np.ndarray:
    """The representative of ``total mod 2^bits`` in ``(-2^(bits-1), 2^(bits-1)]`` (int64)."""
    q = np.uint64(1) << np.uint64(bits)
    t = np.asarray(total, dtype=np.uint64) & (q - np.uint64(1))
    half = q >> np.uint64(1)
    # t > q/2 lies at t - q; computed in uint64 (wraps to the two's complement of q - t)
    return np.where(t > half, t - q, t).astype(np.uint64).view(np.int64)
