"""Messages of the DPLCF protocol: obfuscated bit vectors up, neighbour lists down."""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

_HEADER = struct.Struct("<QQ")


@dataclass(frozen=True)
class ObfuscatedBits:
    """A batch of obfuscated interaction vectors, one packed row of N bits per client.

    The server learns nothing else: no identifier, no timestamp.
    """

    packed: np.ndarray  # uint8 (clients, ceil(N / 8))
    n_items: int

    @classmethod
    def pack(cls, dense: np.ndarray) -> ObfuscatedBits:
        return cls(np.packbits(dense.astype(bool), axis=1), int(dense.shape[1]))

    def unpack(self, dtype: type = np.float32) -> np.ndarray:
        bits = np.unpackbits(self.packed, axis=1, count=self.n_items)
        return bits.astype(dtype, copy=False)

    @property
    def n_clients(self) -> int:
        return int(self.packed.shape[0])

    def to_bytes(self) -> bytes:
        return _HEADER.pack(self.n_clients, self.n_items) + self.packed.tobytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> ObfuscatedBits:
        n, items = _HEADER.unpack_from(data)
        packed = np.frombuffer(data, np.uint8, offset=_HEADER.size).reshape(n, (items + 7) // 8)
        return cls(packed.copy(), int(items))


@dataclass(frozen=True)
class NeighbourLists:
    """The server's user-independent broadcast: each item's K neighbours and similarities.

    ``full`` optionally carries the whole similarity matrix, needed only for the
    user-history neighbourhood (ranking among the items the user interacted with).
    """

    indices: np.ndarray  # int32 (N, K)
    sims: np.ndarray  # float32 (N, K)
    full: np.ndarray | None = None  # float32 (N, N)

    @property
    def nbytes(self) -> int:
        """Size of :meth:`to_bytes`, computed without serialising."""
        n, k = self.indices.shape
        full = 4 * n * n if self.full is not None else 0
        return struct.calcsize("<QQ?") + 8 * n * k + full

    def to_bytes(self) -> bytes:
        n, k = self.indices.shape
        body = self.indices.astype(np.int32).tobytes() + self.sims.astype(np.float32).tobytes()
        if self.full is not None:
            body += self.full.astype(np.float32).tobytes()
        return struct.pack("<QQ?", n, k, self.full is not None) + body

    @classmethod
    def from_bytes(cls, data: bytes) -> NeighbourLists:
        n, k, has_full = struct.unpack_from("<QQ?", data)
        off = struct.calcsize("<QQ?")
        idx = np.frombuffer(data, np.int32, n * k, off).reshape(n, k)
        off += 4 * n * k
        sims = np.frombuffer(data, np.float32, n * k, off).reshape(n, k)
        off += 4 * n * k
        full = np.frombuffer(data, np.float32, n * n, off).reshape(n, n) if has_full else None
        return cls(idx.copy(), sims.copy(), None if full is None else full.copy())
