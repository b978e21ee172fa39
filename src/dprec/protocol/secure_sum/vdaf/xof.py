"""XofTurboShake128 (draft-irtf-cfrg-vdaf §6.2.1): TurboSHAKE128 (RFC 9861) with domain
byte 1 over ``len(dst) (2 bytes LE) || dst || len(seed) (1 byte) || seed || binder``.

TurboSHAKE is not in ``cryptography`` (it has SHAKE, not TurboSHAKE), so this module takes it
from pycryptodomex's ``Cryptodome.Hash.TurboSHAKE128``, an audited library (the spec's own
reference code uses the same one); nothing here is hand-rolled.

Field vectors are drawn by rejection (``next_vec``): each ``ENCODED_SIZE``-byte
little-endian word, masked to ``next_power_of_2(p) - 1``, is kept when ``< p``. Both fields
here have ``p > 2^(8 ENCODED_SIZE - 1)``, so the mask is all ones; the draws are read in
blocks and the rejected ones replaced by the next words, in stream order.
"""

from __future__ import annotations

import numpy as np
from Cryptodome.Hash import TurboSHAKE128

from dprec.protocol.secure_sum.vdaf.field import Field

__all__ = ["SEED_SIZE", "XofTurboShake128"]

SEED_SIZE = 32


class XofTurboShake128:
    """One XOF stream from ``(seed, dst, binder)``."""

    SEED_SIZE = SEED_SIZE

    def __init__(self, seed: bytes, dst: bytes, binder: bytes) -> None:
        if len(seed) > 255 or len(dst) > 65535:
            raise ValueError("seed or domain separation tag too long")
        self._h = TurboSHAKE128.new(domain=1)
        self._h.update(len(dst).to_bytes(2, "little") + dst + len(seed).to_bytes(1, "little")
                       + seed + binder)

    def next(self, length: int) -> bytes:
        """The next ``length`` bytes of the stream."""
        return self._h.read(length)

    def next_vec(self, field: type[Field], length: int) -> np.ndarray:
        """The next ``length`` field elements (rejection sampling, module docstring)."""
        kept: list[np.ndarray] = []
        have = 0
        while have < length:
            block = field.decode_unchecked(self.next((length - have) * field.ENCODED_SIZE))
            block = block[field.below_modulus(block)]
            kept.append(block)
            have += len(block)
        out = np.concatenate(kept) if kept else field.zeros(0)
        return out[:length]

    @classmethod
    def derive_seed(cls, seed: bytes, dst: bytes, binder: bytes) -> bytes:
        """A new seed: the first ``SEED_SIZE`` bytes of the stream."""
        return cls(seed, dst, binder).next(cls.SEED_SIZE)

    @classmethod
    def expand_into_vec(cls, field: type[Field], seed: bytes, dst: bytes, binder: bytes,
                        length: int) -> np.ndarray:
        """``length`` field elements from a fresh stream."""
        return cls(seed, dst, binder).next_vec(field, length)
