"""Messages of the DPLCF protocol: obfuscated bit vectors up, neighbour lists down.

Built on the one framing of :mod:`dprec.protocol.messages` (header, validated decoders):

====  =================  ==========================  =====================================
kind  class              fixed fields                arrays
====  =================  ==========================  =====================================
6     ObfuscatedBits     clients u32, n_items u32    clients x ceil(n_items/8) bytes
7     NeighbourLists     n u32, k u32, full u8 0/1   n x k i32 indices, n x k f32 sims,
                                                     n x n f32 full similarities if full=1
====  =================  ==========================  =====================================
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dprec.protocol.messages import (
    HEADER,
    MAX_ITEMS,
    U32_MAX,
    Message,
    MessageError,
    array_field,
    check_length,
    int_array,
    integer_field,
    real_array,
    unpack_fixed,
)

__all__ = ["NeighbourLists", "ObfuscatedBits"]


@dataclass(frozen=True, eq=False)
class ObfuscatedBits(Message):
    """DPLCF upload: a batch of obfuscated interaction vectors, one packed row of N bits each.

    ``packed``: uint8 ``(clients, ceil(N / 8))`` from ``numpy.packbits`` (first item in the
    high bit, padding bits 0). The server learns nothing else: no identifier, no timestamp.
    Wire: clients u32, n_items u32 (<= MAX_ITEMS), clients x ceil(n_items/8) bytes.
    """

    KIND: ClassVar[int] = 6
    _FIXED: ClassVar[struct.Struct] = struct.Struct("<II")

    packed: np.ndarray
    n_items: int

    def __post_init__(self) -> None:
        n_items = integer_field("n_items", self.n_items, 0, MAX_ITEMS)
        packed = array_field("packed", self.packed, 2)
        if packed.dtype != np.uint8:
            raise MessageError(f"packed must have dtype uint8, got {packed.dtype}")
        width = (n_items + 7) // 8
        if packed.shape[1] != width:
            raise MessageError(
                f"packed must have shape (clients, {width}) for n_items={n_items}, "
                f"got {packed.shape}"
            )
        integer_field("clients (packed rows)", packed.shape[0], 0, U32_MAX)
        packed = np.ascontiguousarray(packed)
        if n_items % 8 and packed.size and np.any(packed[:, -1] & ((1 << (8 - n_items % 8)) - 1)):
            raise MessageError(f"padding bits after the {n_items} item bits must be 0")
        object.__setattr__(self, "packed", packed)
        object.__setattr__(self, "n_items", n_items)

    @classmethod
    def pack(cls, dense: object) -> ObfuscatedBits:
        """Pack a ``(clients, n_items)`` array; nonzero entries are 1 bits."""
        arr = array_field("dense", dense, 2)
        if arr.dtype.kind not in "biu":
            arr = arr != 0
        return cls(np.packbits(arr, axis=1), int(arr.shape[1]))

    def unpack(self, dtype: type = np.float32) -> np.ndarray:
        """The ``(clients, n_items)`` bits as ``dtype``."""
        bits = np.unpackbits(self.packed, axis=1, count=self.n_items)
        return bits.astype(dtype, copy=False)

    @property
    def n_clients(self) -> int:
        return int(self.packed.shape[0])

    @property
    def nbytes(self) -> int:
        return HEADER.size + self._FIXED.size + self.packed.nbytes

    def _parts(self) -> list[bytes | memoryview]:
        return [self._FIXED.pack(self.n_clients, self.n_items), memoryview(self.packed)]

    @classmethod
    def _parse(cls, payload: memoryview) -> ObfuscatedBits:
        (clients, n_items), off = unpack_fixed("ObfuscatedBits", payload, cls._FIXED)
        if n_items > MAX_ITEMS:
            raise MessageError(f"n_items must be in [0, {MAX_ITEMS}], got {n_items}")
        width = (n_items + 7) // 8
        body = payload[off:]
        check_length("ObfuscatedBits", body, clients * width, f"{clients} x {n_items} bits")
        packed = np.frombuffer(body, dtype="u1").reshape(clients, width).copy()
        return cls(packed, n_items)


@dataclass(frozen=True, eq=False)
class NeighbourLists(Message):
    """DPLCF broadcast (user-independent): each item's K neighbours and their similarities.

    ``indices`` int32 ``(N, K)`` in ``[0, N)``, ``sims`` float32 ``(N, K)`` finite; ``full``
    optionally the whole float32 ``(N, N)`` similarity matrix (finite), needed only for the
    user-history neighbourhood. A client calls :meth:`check_for` with its own item count.
    Wire: N u32 (<= MAX_ITEMS), K u32, has_full u8 (0 or 1), indices, sims, [full].
    """

    KIND: ClassVar[int] = 7
    _FIXED: ClassVar[struct.Struct] = struct.Struct("<IIB")

    indices: np.ndarray
    sims: np.ndarray
    full: np.ndarray | None = None

    def __post_init__(self) -> None:
        raw = array_field("indices", self.indices, 2)
        n, k = raw.shape
        integer_field("n_items (indices rows)", n, 0, MAX_ITEMS)
        integer_field("k (indices columns)", k, 0, U32_MAX)
        idx = int_array("indices", raw, "<i4", 0, n - 1, ndim=2)
        sims = real_array("sims", self.sims, 2)
        if sims.shape != idx.shape:
            raise MessageError(f"sims must have the shape of indices {idx.shape}, got {sims.shape}")
        full = None
        if self.full is not None:
            full = real_array("full", self.full, 2)
            if full.shape != (n, n):
                raise MessageError(f"full must have shape ({n}, {n}), got {full.shape}")
        object.__setattr__(self, "indices", idx)
        object.__setattr__(self, "sims", sims)
        object.__setattr__(self, "full", full)

    @property
    def n_items(self) -> int:
        return int(self.indices.shape[0])

    @property
    def k(self) -> int:
        """Neighbours per item."""
        return int(self.indices.shape[1])

    def check_for(self, n_items: int, *, need_full: bool = False) -> NeighbourLists:
        """Raise :class:`MessageError` unless this broadcast fits a client with ``n_items``.

        Content (ranges, finiteness) is checked at construction; this checks the size the
        client expects and, with ``need_full``, that the full matrix was sent.
        """
        if self.n_items != n_items:
            raise MessageError(
                f"neighbour lists must cover the client's {n_items} items, got {self.n_items}"
            )
        if need_full and self.full is None:
            raise MessageError("the user-history neighbourhood needs the full similarity matrix")
        return self

    @property
    def nbytes(self) -> int:
        """Size of :meth:`to_bytes`, computed without serialising."""
        n, k = self.indices.shape
        full = 4 * n * n if self.full is not None else 0
        return HEADER.size + self._FIXED.size + 8 * n * k + full

    def _parts(self) -> list[bytes | memoryview]:
        n, k = self.indices.shape
        parts: list[bytes | memoryview] = [
            self._FIXED.pack(n, k, self.full is not None),
            memoryview(self.indices),
            memoryview(self.sims),
        ]
        if self.full is not None:
            parts.append(memoryview(self.full))
        return parts

    @classmethod
    def _parse(cls, payload: memoryview) -> NeighbourLists:
        (n, k, has_full), off = unpack_fixed("NeighbourLists", payload, cls._FIXED)
        if has_full not in (0, 1):
            raise MessageError(f"has_full must be 0 or 1, got {has_full}")
        body = payload[off:]
        size = 8 * n * k + 4 * n * n * has_full
        check_length("NeighbourLists", body, size, f"N={n}, K={k}, has_full={has_full}")
        idx = np.frombuffer(body, "<i4", n * k, 0).reshape(n, k).copy()
        sims = np.frombuffer(body, "<f4", n * k, 4 * n * k).reshape(n, k).copy()
        full = None
        if has_full:
            full = np.frombuffer(body, "<f4", n * n, 8 * n * k).reshape(n, n).copy()
        return cls(idx, sims, full)
