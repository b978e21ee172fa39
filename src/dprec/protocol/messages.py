"""Typed protocol messages that serialise to bytes (no pickle), one framing for all.

Wire format (little-endian). Every message starts with the same 6-byte header: ``b"DPRC"``,
format version (uint8, :data:`VERSION`), message kind (uint8). The kind's fixed fields
(``struct``) and its arrays (raw NumPy buffers) follow; the message ends exactly where they
end. A report's (item, factor) pair travels as one uint32 index, item << 8 | factor (items
below 2^24, factors below 256); bits are packed 8 per byte (``numpy.packbits``, first bit in
the high bit, padding bits 0), so a FMF-LDP report costs 4 bytes and 1 bit, the paper's
accounting.

====  =================  ==========================  =====================================
kind  class              fixed fields                arrays
====  =================  ==========================  =====================================
1     GradientReports    client_id i64, k u32        k u32 index, ceil(k/8) bytes of bits
2     ShuffledReports    m u64                       m u32 index, ceil(m/8) bytes of bits
3     ItemMatrix         epoch i64, n u32, f u32     n x f f32 (row-major)
4     ValueReports       client_id i64, k u32        k u32 index, k f32 values
5     ShuffledValues     m u64                       m u32 index, m f32 values
6     ObfuscatedBits     clients u32, n_items u32    clients x ceil(n_items/8) bytes
7     NeighbourLists     n u32, k u32, full u8 0/1   n x k i32 indices, n x k f32 sims,
                                                     n x n f32 full similarities if full=1
8     ModelBroadcast     round i64, clip f64,        n f32 parameters, m u32 client ids
                         n u32, m u32
9     ModelUpdates       m u32, n u32                m x n f32 updates, m u8 clip bits
10    ItemMatrix64       epoch i64, n u32, f u32     n x f f64 (row-major)
====  =================  ==========================  =====================================

Decoders trust nothing: :meth:`Message.from_bytes` raises :class:`MessageError` on any
malformed input (truncated, trailing bytes, length fields that disagree with the buffer,
unknown kind or version, content out of range), and every constructor validates its content
(dtypes, shapes, index ranges, finiteness), so a decoded message is always a valid one.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, fields
from typing import ClassVar, TypeVar

import numpy as np

from dprec.errors import DprecError

__all__ = [
    "MAX_ITEMS",
    "VERSION",
    "MessageError",
    "Message",
    "GradientReports",
    "ShuffledReports",
    "ValueReports",
    "ShuffledValues",
    "ItemMatrix",
    "ItemMatrix64",
    "ObfuscatedBits",
    "NeighbourLists",
    "ModelBroadcast",
    "ModelUpdates",
]

MAGIC = b"DPRC"
MAX_ITEMS = 1 << 24
"""Item indices must fit the 24 high bits of a report's index; item counts are <= this."""
VERSION = 2
"""Version 2: value reports use the 4-byte index; DPLCF messages carry the header."""
_HEADER = struct.Struct("<4sBB")
_U32 = (1 << 32) - 1
_I64 = (-(1 << 63), (1 << 63) - 1)

M = TypeVar("M", bound="Message")


class MessageError(DprecError):
    """A message's content or byte string is not valid: the one error of this module."""


def _integer(name: str, value: object, low: int, high: int) -> int:
    """``value`` as a Python int, refusing non-integers (1.5, "3", True) and out-of-range."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise MessageError(f"{name} must be an integer, got {value!r}")
    v = int(value)
    if not low <= v <= high:
        raise MessageError(f"{name} must be in [{low}, {high}], got {v}")
    return v


def _asarray(name: str, values: object, ndim: int) -> np.ndarray:
    try:
        arr = np.asarray(values)
    except (ValueError, TypeError) as e:
        raise MessageError(f"{name} must be an array, got {type(values).__name__}: {e}") from e
    if arr.ndim != ndim:
        raise MessageError(f"{name} must be {ndim}-D, got shape {arr.shape}")
    return arr


def _int_array(
    name: str, values: object, dtype: str, low: int, high: int, ndim: int = 1
) -> np.ndarray:
    """Integers (or booleans) in ``[low, high]`` as a contiguous ``dtype`` array."""
    arr = _asarray(name, values, ndim)
    if arr.size and arr.dtype.kind not in "biu":
        raise MessageError(f"{name} must hold integers, got dtype {arr.dtype}")
    if arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        if lo < low or hi > high:
            raise MessageError(f"{name} must be in [{low}, {high}], got values in [{lo}, {hi}]")
    return np.ascontiguousarray(arr, dtype=np.dtype(dtype))


def _all_finite(arr: np.ndarray) -> bool:
    """No NaN or inf, without an array-sized temporary in the common case."""
    with np.errstate(all="ignore"):
        if np.isfinite(arr.sum()):  # NaN and inf propagate through a sum
            return True
        return bool(np.isfinite(arr).all())  # the sum may have overflowed on finite values


def _real_array(name: str, values: object, ndim: int, dtype: str = "<f4") -> np.ndarray:
    """Finite real numbers as a contiguous float32 (or ``dtype``) array (no copy if already
    one)."""
    arr = _asarray(name, values, ndim)
    if arr.size and arr.dtype.kind not in "biuf":
        raise MessageError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    with np.errstate(over="ignore"):
        out = np.ascontiguousarray(arr, dtype=dtype)
    if out.size and not _all_finite(out):
        width = "float32" if dtype == "<f4" else "float64"
        raise MessageError(f"{name} must be finite (as {width}), got NaN or inf")
    return out


def _unpack_fixed(name: str, payload: memoryview, fixed: struct.Struct) -> tuple[tuple, int]:
    """Unpack the fixed fields; return them and the offset of the arrays."""
    if len(payload) < fixed.size:
        raise MessageError(
            f"{name} payload must be >= {fixed.size} bytes, got {len(payload)} (truncated)"
        )
    return fixed.unpack_from(payload), fixed.size


def _check_length(name: str, body: memoryview, expected: int, what: str) -> None:
    """Compare a length derived from header fields with the buffer before any allocation."""
    if len(body) != expected:
        raise MessageError(f"{name} payload must be {expected} bytes for {what}, got {len(body)}")


class Message:
    """Base: ``to_bytes()``, ``from_bytes()``, ``nbytes``; equality compares array contents.

    Subclasses set ``KIND`` (registering the kind byte) and implement ``_parts`` (the buffers
    following the header), ``_parse`` and ``nbytes``. Classes without their own ``KIND`` are
    abstract and not registered.
    """

    KIND: ClassVar[int] = 0
    _registry: ClassVar[dict[int, type[Message]]] = {}

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "KIND" not in cls.__dict__:
            return
        if cls.KIND in Message._registry:
            raise TypeError(f"message kind {cls.KIND} registered twice")
        Message._registry[cls.KIND] = cls

    def _parts(self) -> list[bytes | memoryview]:
        raise NotImplementedError

    @classmethod
    def _parse(cls: type[M], payload: memoryview) -> M:
        raise NotImplementedError

    def to_bytes(self) -> bytes:
        """Header followed by the kind's payload (one copy of each array)."""
        return b"".join([_HEADER.pack(MAGIC, VERSION, self.KIND), *self._parts()])

    @property
    def nbytes(self) -> int:
        """Size of :meth:`to_bytes` in bytes (computed without serialising)."""
        raise NotImplementedError

    @classmethod
    def from_bytes(cls: type[M], data: bytes | bytearray | memoryview) -> M:
        """Parse ``data``; on ``Message`` itself dispatch on the kind byte.

        Raises :class:`MessageError` on any malformed input.
        """
        try:
            view = memoryview(data).cast("B")
        except TypeError as e:
            raise MessageError(
                f"message must be contiguous bytes, got {type(data).__name__}"
            ) from e
        if len(view) < _HEADER.size:
            raise MessageError(f"message must be >= {_HEADER.size} bytes, got {len(view)}")
        magic, version, kind = _HEADER.unpack_from(view)
        if magic != MAGIC:
            raise MessageError(f"message must start with {MAGIC!r}, got {bytes(magic)!r}")
        if version != VERSION:
            raise MessageError(f"message version must be {VERSION}, got {version}")
        target = Message._registry.get(kind)
        if target is None:
            raise MessageError(f"unknown message kind {kind}")
        if cls is not Message and target is not cls:
            raise MessageError(f"expected a {cls.__name__} message, got {target.__name__}")
        return target._parse(view[_HEADER.size :])  # type: ignore[return-value]

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        for f in fields(self):  # type: ignore[arg-type]
            a, b = getattr(self, f.name), getattr(other, f.name)
            if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
                if not isinstance(a, np.ndarray) or not isinstance(b, np.ndarray):
                    return False
                if a.dtype != b.dtype or not np.array_equal(a, b):
                    return False
            elif a != b:
                return False
        return True

    __hash__ = None  # type: ignore[assignment]


# -- reports: (item, factor, value) triples, one generic class per shape ----------------------


class _Codec:
    """How the value of each report travels: its field name, size, encoder and decoder."""

    field: ClassVar[str]

    def check(self, values: object) -> np.ndarray:
        raise NotImplementedError

    def nbytes(self, k: int) -> int:
        raise NotImplementedError

    def encode(self, values: np.ndarray) -> bytes | memoryview:
        raise NotImplementedError

    def decode(self, buf: memoryview, k: int) -> np.ndarray:
        """``buf`` is exactly ``nbytes(k)`` long."""
        raise NotImplementedError


class _BitCodec(_Codec):
    """One bit per report, packed 8 per byte (first report in the high bit, padding 0)."""

    field = "bits"

    def check(self, values: object) -> np.ndarray:
        return _int_array("bits", values, "u1", 0, 1)

    def nbytes(self, k: int) -> int:
        return (k + 7) // 8

    def encode(self, values: np.ndarray) -> bytes | memoryview:
        return memoryview(np.packbits(values))

    def decode(self, buf: memoryview, k: int) -> np.ndarray:
        packed = np.frombuffer(buf, dtype="u1")
        if k % 8 and packed[-1] & ((1 << (8 - k % 8)) - 1):
            raise MessageError(f"padding bits after the {k} report bits must be 0")
        return np.unpackbits(packed, count=k)


class _FloatCodec(_Codec):
    """One finite float32 per report."""

    field = "values"

    def check(self, values: object) -> np.ndarray:
        return _real_array("values", values, 1)

    def nbytes(self, k: int) -> int:
        return 4 * k

    def encode(self, values: np.ndarray) -> bytes | memoryview:
        return memoryview(values)

    def decode(self, buf: memoryview, k: int) -> np.ndarray:
        return np.frombuffer(buf, dtype="<f4", count=k).copy()


_SENDER = struct.Struct("<qI")  # client_id, k
_BATCH = struct.Struct("<Q")  # m


class _Reports(Message):
    """Shared logic of the report messages: ``items``, ``factors`` and a value per report.

    A subclass is a dataclass naming its fields (``client_id`` first if ``_SENDER_ID``, then
    ``items``, ``factors`` and the codec's field) and choosing ``_CODEC``. Payload: the fixed
    fields (client_id i64 + k u32 with a sender, m u64 without), k uint32 indices
    ``item << 8 | factor``, then the codec's bytes.
    """

    _CODEC: ClassVar[_Codec]
    _SENDER_ID: ClassVar[bool]

    items: np.ndarray
    factors: np.ndarray

    @classmethod
    def _fixed(cls) -> struct.Struct:
        return _SENDER if cls._SENDER_ID else _BATCH

    def __post_init__(self) -> None:
        name = self._CODEC.field
        if self._SENDER_ID:
            client_id = _integer("client_id", self.client_id, *_I64)  # type: ignore[attr-defined]
            object.__setattr__(self, "client_id", client_id)
        it = _int_array("items", self.items, "<i4", 0, MAX_ITEMS - 1)
        fa = _int_array("factors", self.factors, "u1", 0, 255)
        va = self._CODEC.check(getattr(self, name))
        if not it.size == fa.size == va.size:
            raise MessageError(
                f"items, factors and {name} must have the same length, got "
                f"{it.size}, {fa.size}, {va.size}"
            )
        if self._SENDER_ID and it.size > _U32:
            raise MessageError(f"a client message holds <= {_U32} reports, got {it.size}")
        object.__setattr__(self, "items", it)
        object.__setattr__(self, "factors", fa)
        object.__setattr__(self, name, va)

    @property
    def k(self) -> int:
        """Number of reports."""
        return int(self.items.size)

    def __len__(self) -> int:
        return int(self.items.size)

    @classmethod
    def serialized_size(cls, k: int) -> int:
        """Bytes of a message holding ``k`` reports (without building it)."""
        return _HEADER.size + cls._fixed().size + 4 * k + cls._CODEC.nbytes(k)

    @property
    def nbytes(self) -> int:
        return self.serialized_size(self.k)

    def _parts(self) -> list[bytes | memoryview]:
        head = (self.client_id, self.k) if self._SENDER_ID else (self.k,)  # type: ignore[attr-defined]
        index = (self.items.astype("<u4") << np.uint32(8)) | self.factors.astype("<u4")
        return [
            self._fixed().pack(*head),
            memoryview(index),
            self._CODEC.encode(getattr(self, self._CODEC.field)),
        ]

    @classmethod
    def _parse(cls, payload: memoryview) -> _Reports:
        head, off = _unpack_fixed(cls.__name__, payload, cls._fixed())
        k = head[-1]
        body = payload[off:]
        _check_length(cls.__name__, body, 4 * k + cls._CODEC.nbytes(k), f"{k} reports")
        index = np.frombuffer(body, dtype="<u4", count=k)
        items = (index >> np.uint32(8)).astype("<i4")
        factors = (index & np.uint32(0xFF)).astype("u1")
        values = cls._CODEC.decode(body[4 * k :], k)
        return cls(*head[:-1], items, factors, values)


@dataclass(frozen=True, eq=False)
class GradientReports(_Reports):
    """One client's FMF-LDP message for one epoch: ``k`` reports ``(item, factor, bit)``.

    ``bits[j] = 1`` means the value ``+B``, 0 means ``-B`` (SYSTEMS.md §2, Algorithm 1).
    The ``client_id`` is transport metadata: the proxy strips it.
    Wire: client_id i64, k u32, k u32 indices, ceil(k/8) bytes of packed bits.
    """

    KIND: ClassVar[int] = 1
    _CODEC: ClassVar[_Codec] = _BitCodec()
    _SENDER_ID: ClassVar[bool] = True

    client_id: int
    items: np.ndarray
    factors: np.ndarray
    bits: np.ndarray


@dataclass(frozen=True, eq=False)
class ShuffledReports(_Reports):
    """A batch of reports as the proxy forwards it: no sender, no order information.

    Wire: m u64, m u32 indices, ceil(m/8) bytes of packed bits.
    """

    KIND: ClassVar[int] = 2
    _CODEC: ClassVar[_Codec] = _BitCodec()
    _SENDER_ID: ClassVar[bool] = False

    items: np.ndarray
    factors: np.ndarray
    bits: np.ndarray


@dataclass(frozen=True, eq=False)
class ValueReports(_Reports):
    """One client's message of ``k`` real-valued reports ``(item, factor, value)``.

    For real-valued mechanisms (e.g. the piecewise mechanism): 8 bytes per report.
    Wire: client_id i64, k u32, k u32 indices, k f32 values (finite).
    """

    KIND: ClassVar[int] = 4
    _CODEC: ClassVar[_Codec] = _FloatCodec()
    _SENDER_ID: ClassVar[bool] = True

    client_id: int
    items: np.ndarray
    factors: np.ndarray
    values: np.ndarray


@dataclass(frozen=True, eq=False)
class ShuffledValues(_Reports):
    """A forwarded batch of real-valued reports: no sender, no order information.

    Wire: m u64, m u32 indices, m f32 values (finite).
    """

    KIND: ClassVar[int] = 5
    _CODEC: ClassVar[_Codec] = _FloatCodec()
    _SENDER_ID: ClassVar[bool] = False

    items: np.ndarray
    factors: np.ndarray
    values: np.ndarray


# -- broadcasts and DPLCF uploads -------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ItemMatrix(Message):
    """The server's broadcast: item factor matrix ``V`` (float32, ``n_items x n_factors``).

    Wire: epoch i64, n_items u32 (<= MAX_ITEMS), n_factors u32, n x f f32 (finite, row-major).
    """

    KIND: ClassVar[int] = 3
    _FIXED: ClassVar[struct.Struct] = struct.Struct("<qII")
    _DTYPE: ClassVar[str] = "<f4"

    matrix: np.ndarray
    epoch: int = 0

    def __post_init__(self) -> None:
        v = _real_array("matrix", self.matrix, 2, self._DTYPE)
        n, f = v.shape
        _integer("n_items (matrix rows)", n, 0, MAX_ITEMS)
        _integer("n_factors (matrix columns)", f, 0, _U32)
        object.__setattr__(self, "matrix", v)
        object.__setattr__(self, "epoch", _integer("epoch", self.epoch, *_I64))

    @classmethod
    def serialized_size(cls, n_items: int, n_factors: int) -> int:
        """Bytes of a broadcast of an ``n_items x n_factors`` matrix."""
        width = np.dtype(cls._DTYPE).itemsize
        return _HEADER.size + cls._FIXED.size + width * n_items * n_factors

    @property
    def nbytes(self) -> int:
        return self.serialized_size(*self.matrix.shape)

    def check_for(self, n_items: int, n_factors: int) -> ItemMatrix:
        """Raise :class:`MessageError` unless the matrix is ``n_items x n_factors``."""
        if self.matrix.shape != (n_items, n_factors):
            raise MessageError(
                f"item matrix must be ({n_items}, {n_factors}), got {self.matrix.shape}"
            )
        return self

    def _parts(self) -> list[bytes | memoryview]:
        n, f = self.matrix.shape
        return [self._FIXED.pack(self.epoch, n, f), memoryview(self.matrix)]

    @classmethod
    def _parse(cls, payload: memoryview) -> ItemMatrix:
        name = cls.__name__
        (epoch, n, f), off = _unpack_fixed(name, payload, cls._FIXED)
        body = payload[off:]
        size = np.dtype(cls._DTYPE).itemsize
        _check_length(name, body, size * n * f, f"a {n} x {f} matrix")
        matrix = np.frombuffer(body, dtype=cls._DTYPE).reshape(n, f).copy()
        return cls(matrix, epoch)


@dataclass(frozen=True, eq=False)
class ItemMatrix64(ItemMatrix):
    """The item matrix in float64: what the server holds, bit for bit.

    For a simulation over the services, whose clients must compute with exactly the matrix
    the in-process run hands them; devices take the float32 :class:`ItemMatrix` (half the
    bytes). Wire: epoch i64, n_items u32 (<= MAX_ITEMS), n_factors u32, n x f f64 (finite).
    """

    KIND: ClassVar[int] = 10
    _DTYPE: ClassVar[str] = "<f8"


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
        n_items = _integer("n_items", self.n_items, 0, MAX_ITEMS)
        packed = _asarray("packed", self.packed, 2)
        if packed.dtype != np.uint8:
            raise MessageError(f"packed must have dtype uint8, got {packed.dtype}")
        width = (n_items + 7) // 8
        if packed.shape[1] != width:
            raise MessageError(
                f"packed must have shape (clients, {width}) for n_items={n_items}, "
                f"got {packed.shape}"
            )
        _integer("clients (packed rows)", packed.shape[0], 0, _U32)
        packed = np.ascontiguousarray(packed)
        if n_items % 8 and packed.size and np.any(packed[:, -1] & ((1 << (8 - n_items % 8)) - 1)):
            raise MessageError(f"padding bits after the {n_items} item bits must be 0")
        object.__setattr__(self, "packed", packed)
        object.__setattr__(self, "n_items", n_items)

    @classmethod
    def pack(cls, dense: object) -> ObfuscatedBits:
        """Pack a ``(clients, n_items)`` array; nonzero entries are 1 bits."""
        arr = _asarray("dense", dense, 2)
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
        return _HEADER.size + self._FIXED.size + self.packed.nbytes

    def _parts(self) -> list[bytes | memoryview]:
        return [self._FIXED.pack(self.n_clients, self.n_items), memoryview(self.packed)]

    @classmethod
    def _parse(cls, payload: memoryview) -> ObfuscatedBits:
        (clients, n_items), off = _unpack_fixed("ObfuscatedBits", payload, cls._FIXED)
        if n_items > MAX_ITEMS:
            raise MessageError(f"n_items must be in [0, {MAX_ITEMS}], got {n_items}")
        width = (n_items + 7) // 8
        body = payload[off:]
        _check_length("ObfuscatedBits", body, clients * width, f"{clients} x {n_items} bits")
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
        raw = _asarray("indices", self.indices, 2)
        n, k = raw.shape
        _integer("n_items (indices rows)", n, 0, MAX_ITEMS)
        _integer("k (indices columns)", k, 0, _U32)
        idx = _int_array("indices", raw, "<i4", 0, n - 1, ndim=2)
        sims = _real_array("sims", self.sims, 2)
        if sims.shape != idx.shape:
            raise MessageError(f"sims must have the shape of indices {idx.shape}, got {sims.shape}")
        full = None
        if self.full is not None:
            full = _real_array("full", self.full, 2)
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
        return _HEADER.size + self._FIXED.size + 8 * n * k + full

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
        (n, k, has_full), off = _unpack_fixed("NeighbourLists", payload, cls._FIXED)
        if has_full not in (0, 1):
            raise MessageError(f"has_full must be 0 or 1, got {has_full}")
        body = payload[off:]
        size = 8 * n * k + 4 * n * n * has_full
        _check_length("NeighbourLists", body, size, f"N={n}, K={k}, has_full={has_full}")
        idx = np.frombuffer(body, "<i4", n * k, 0).reshape(n, k).copy()
        sims = np.frombuffer(body, "<f4", n * k, 4 * n * k).reshape(n, k).copy()
        full = None
        if has_full:
            full = np.frombuffer(body, "<f4", n * n, 8 * n * k).reshape(n, n).copy()
        return cls(idx, sims, full)


_MAX_PARAMS = 1 << 28
"""Model size limit of a parameter message (1 GiB of float32)."""


@dataclass(frozen=True, eq=False)
class ModelBroadcast(Message):
    """PrivRec broadcast: the global parameters theta_0 (flat float32), the clients the
    server selected for ``round`` and the clip bound S (0: updates are not clipped).

    Wire: round i64, clip f64 (finite, >= 0), n_params u32 (<= 2^28), m u32, n_params f32
    (finite), m u32 client ids. A client calls :meth:`check_for` with its own model's size.
    """

    KIND: ClassVar[int] = 8
    _FIXED: ClassVar[struct.Struct] = struct.Struct("<qdII")

    params: np.ndarray
    clients: np.ndarray
    round: int = 0
    clip: float = 0.0

    def __post_init__(self) -> None:
        params = _real_array("params", self.params, 1)
        _integer("n_params", params.shape[0], 0, _MAX_PARAMS)
        clients = _int_array("clients", self.clients, "<u4", 0, _U32)
        if len(np.unique(clients)) != len(clients):
            raise MessageError("clients must be distinct (a batch drawn without replacement)")
        object.__setattr__(self, "params", params)
        object.__setattr__(self, "clients", clients)
        object.__setattr__(self, "round", _integer("round", self.round, *_I64))
        if isinstance(self.clip, bool) or not isinstance(self.clip, int | float | np.floating):
            raise MessageError(f"clip must be a number, got {self.clip!r}")
        if not (np.isfinite(self.clip) and self.clip >= 0):
            raise MessageError(f"clip must be finite and >= 0, got {self.clip}")
        object.__setattr__(self, "clip", float(self.clip))

    def check_for(self, n_params: int, n_clients: int) -> ModelBroadcast:
        """Raise :class:`MessageError` unless it has ``n_params`` parameters and every
        selected client is one of ``n_clients``."""
        if self.params.shape[0] != n_params:
            raise MessageError(f"broadcast must carry {n_params} parameters, "
                               f"got {self.params.shape[0]}")
        if self.clients.size and int(self.clients.max()) >= n_clients:
            raise MessageError(f"selected client {int(self.clients.max())} is not one of the "
                               f"{n_clients} clients")
        return self

    @property
    def nbytes(self) -> int:
        return _HEADER.size + self._FIXED.size + 4 * (self.params.size + self.clients.size)

    def _parts(self) -> list[bytes | memoryview]:
        return [self._FIXED.pack(self.round, self.clip, self.params.size, self.clients.size),
                memoryview(self.params), memoryview(self.clients)]

    @classmethod
    def _parse(cls, payload: memoryview) -> ModelBroadcast:
        (rnd, clip, n, m), off = _unpack_fixed("ModelBroadcast", payload, cls._FIXED)
        if n > _MAX_PARAMS:
            raise MessageError(f"n_params must be in [0, {_MAX_PARAMS}], got {n}")
        body = payload[off:]
        _check_length("ModelBroadcast", body, 4 * (n + m), f"{n} parameters and {m} clients")
        params = np.frombuffer(body[:4 * n], dtype="<f4").copy()
        clients = np.frombuffer(body[4 * n:], dtype="<u4").copy()
        return cls(params, clients, rnd, clip)


@dataclass(frozen=True, eq=False)
class ModelUpdates(Message):
    """PrivRec upload of a batch of clients: each client's update Delta = theta - theta_0
    (clipped to the bound for DP-PrivRec) and its clip indicator b = 1[|Delta| <= S].

    No identifier travels. Wire: m u32, n_params u32 (<= 2^28), m x n_params f32 (finite,
    row-major), m bytes of 0/1.
    """

    KIND: ClassVar[int] = 9
    _FIXED: ClassVar[struct.Struct] = struct.Struct("<II")

    deltas: np.ndarray
    unclipped: np.ndarray

    def __post_init__(self) -> None:
        deltas = _real_array("deltas", self.deltas, 2)
        _integer("clients (deltas rows)", deltas.shape[0], 0, _U32)
        _integer("n_params (deltas columns)", deltas.shape[1], 0, _MAX_PARAMS)
        unclipped = _int_array("unclipped", self.unclipped, "u1", 0, 1)
        if unclipped.shape != (deltas.shape[0],):
            raise MessageError(f"unclipped must have one 0/1 entry per client "
                               f"({deltas.shape[0]}), got shape {unclipped.shape}")
        object.__setattr__(self, "deltas", deltas)
        object.__setattr__(self, "unclipped", unclipped)

    def check_for(self, n_params: int, max_clients: int) -> ModelUpdates:
        """Raise :class:`MessageError` unless each update has ``n_params`` entries and there
        are at most ``max_clients`` of them."""
        if self.deltas.shape[1] != n_params:
            raise MessageError(f"updates must have {n_params} parameters, "
                               f"got {self.deltas.shape[1]}")
        if self.deltas.shape[0] > max_clients:
            raise MessageError(f"at most {max_clients} updates per round, "
                               f"got {self.deltas.shape[0]}")
        return self

    @property
    def nbytes(self) -> int:
        return _HEADER.size + self._FIXED.size + self.deltas.nbytes + self.unclipped.nbytes

    def _parts(self) -> list[bytes | memoryview]:
        m, n = self.deltas.shape
        return [self._FIXED.pack(m, n), memoryview(self.deltas), memoryview(self.unclipped)]

    @classmethod
    def _parse(cls, payload: memoryview) -> ModelUpdates:
        (m, n), off = _unpack_fixed("ModelUpdates", payload, cls._FIXED)
        if n > _MAX_PARAMS:
            raise MessageError(f"n_params must be in [0, {_MAX_PARAMS}], got {n}")
        body = payload[off:]
        _check_length("ModelUpdates", body, 4 * m * n + m, f"{m} x {n} updates")
        deltas = np.frombuffer(body[:4 * m * n], dtype="<f4").reshape(m, n).copy()
        unclipped = np.frombuffer(body[4 * m * n:], dtype="u1").copy()
        return cls(deltas, unclipped)
