"""The one framing of every protocol message: typed records that serialise to bytes (no
pickle), with validated decoders; and the messages the protocol layer itself moves.

Wire format (little-endian). Every message starts with the same 6-byte header: ``b"DPRC"``,
format version (uint8, :data:`VERSION`), message kind (uint8). The kind's fixed fields
(``struct``) and its arrays (raw NumPy buffers) follow; the message ends exactly where they
end. A report's (item, factor) pair travels as one uint32 index, item << 8 | factor (items
below 2^24, factors below 256); bits are packed 8 per byte (``numpy.packbits``, first bit in
the high bit, padding bits 0), so a FMF-LDP report costs 4 bytes and 1 bit, the paper's
accounting.

Defined here, because the shuffler (:mod:`dprec.protocol.shuffler`) and the round engine
(:mod:`dprec.protocol.engine`) move them for more than one system:

====  =================  ==========================  =====================================
kind  class              fixed fields                arrays
====  =================  ==========================  =====================================
1     GradientReports    client_id i64, k u32        k u32 index, ceil(k/8) bytes of bits
2     ShuffledReports    m u64                       m u32 index, ceil(m/8) bytes of bits
3     ItemMatrix         epoch i64, n u32, f u32     n x f f32 (row-major)
4     ValueReports       client_id i64, k u32        k u32 index, k f32 values
5     ShuffledValues     m u64                       m u32 index, m f32 values
10    ItemMatrix64       epoch i64, n u32, f u32     n x f f64 (row-major)
====  =================  ==========================  =====================================

A system's own messages live next to the system, in ``systems/<name>/messages.py``, built
on this framing (:class:`Message`, the validators :func:`integer_field`, :func:`int_array`,
:func:`real_array`, :func:`unpack_fixed`, :func:`check_length`); each system's
``messages.py`` says which kinds it owns. A kind is registered
when its module is imported; the services reach a system's types through its deployment
descriptor (:mod:`dprec.protocol.deployment`), which imports them.

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
    "HEADER",
    "I64_RANGE",
    "MAX_FACTORS",
    "MAX_ITEMS",
    "U32_MAX",
    "VERSION",
    "MessageError",
    "Message",
    "GradientReports",
    "ShuffledReports",
    "ValueReports",
    "ShuffledValues",
    "ItemMatrix",
    "ItemMatrix64",
    "array_field",
    "check_length",
    "int_array",
    "integer_field",
    "real_array",
    "unpack_fixed",
]

MAGIC = b"DPRC"
MAX_ITEMS = 1 << 24
"""Item indices must fit the 24 high bits of a report's index; item counts are <= this."""
MAX_FACTORS = 1 << 10
"""Latent factors of a broadcast factor matrix are <= this."""
VERSION = 2
"""Version 2: value reports use the 4-byte index; DPLCF messages carry the header."""
HEADER = struct.Struct("<4sBB")
"""magic, version, kind: the first bytes of every message."""
U32_MAX = (1 << 32) - 1
I64_RANGE = (-(1 << 63), (1 << 63) - 1)

M = TypeVar("M", bound="Message")


class MessageError(DprecError):
    """A message's content or byte string is not valid: the one error of this module."""


def integer_field(name: str, value: object, low: int, high: int) -> int:
    """``value`` as a Python int, refusing non-integers (1.5, "3", True) and out-of-range."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise MessageError(f"{name} must be an integer, got {value!r}")
    v = int(value)
    if not low <= v <= high:
        raise MessageError(f"{name} must be in [{low}, {high}], got {v}")
    return v


def array_field(name: str, values: object, ndim: int) -> np.ndarray:
    """``values`` as an ``ndim``-D array (any dtype; the callers check it)."""
    try:
        arr = np.asarray(values)
    except (ValueError, TypeError) as e:
        raise MessageError(f"{name} must be an array, got {type(values).__name__}: {e}") from e
    if arr.ndim != ndim:
        raise MessageError(f"{name} must be {ndim}-D, got shape {arr.shape}")
    return arr


def int_array(
    name: str, values: object, dtype: str, low: int, high: int, ndim: int = 1
) -> np.ndarray:
    """Integers (or booleans) in ``[low, high]`` as a contiguous ``dtype`` array."""
    arr = array_field(name, values, ndim)
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


def real_array(name: str, values: object, ndim: int, dtype: str = "<f4") -> np.ndarray:
    """Finite real numbers as a contiguous float32 (or ``dtype``) array (no copy if already
    one)."""
    arr = array_field(name, values, ndim)
    if arr.size and arr.dtype.kind not in "biuf":
        raise MessageError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    with np.errstate(over="ignore"):
        out = np.ascontiguousarray(arr, dtype=dtype)
    if out.size and not _all_finite(out):
        width = "float32" if dtype == "<f4" else "float64"
        raise MessageError(f"{name} must be finite (as {width}), got NaN or inf")
    return out


def factor_matrix(name: str, values: object) -> np.ndarray:
    """An (items x F) float64 matrix of finite factors, items <= MAX_ITEMS, F <= MAX_FACTORS."""
    V = real_array(name, values, 2, "<f8")
    integer_field("items", V.shape[0], 0, MAX_ITEMS)
    integer_field("factors", V.shape[1], 0, MAX_FACTORS)
    return V


def unpack_fixed(name: str, payload: memoryview, fixed: struct.Struct) -> tuple[tuple, int]:
    """Unpack the fixed fields; return them and the offset of the arrays."""
    if len(payload) < fixed.size:
        raise MessageError(
            f"{name} payload must be >= {fixed.size} bytes, got {len(payload)} (truncated)"
        )
    return fixed.unpack_from(payload), fixed.size


def check_length(name: str, body: memoryview, expected: int, what: str) -> None:
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
        return b"".join([HEADER.pack(MAGIC, VERSION, self.KIND), *self._parts()])

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
        if len(view) < HEADER.size:
            raise MessageError(f"message must be >= {HEADER.size} bytes, got {len(view)}")
        magic, version, kind = HEADER.unpack_from(view)
        if magic != MAGIC:
            raise MessageError(f"message must start with {MAGIC!r}, got {bytes(magic)!r}")
        if version != VERSION:
            raise MessageError(f"message version must be {VERSION}, got {version}")
        target = Message._registry.get(kind)
        if target is None:
            raise MessageError(f"unknown message kind {kind}")
        if cls is not Message and target is not cls:
            raise MessageError(f"expected a {cls.__name__} message, got {target.__name__}")
        return target._parse(view[HEADER.size :])  # type: ignore[return-value]

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
        return int_array("bits", values, "u1", 0, 1)

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
        return real_array("values", values, 1)

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
            client_id = integer_field(
                "client_id", self.client_id, *I64_RANGE)  # type: ignore[attr-defined]
            object.__setattr__(self, "client_id", client_id)
        it = int_array("items", self.items, "<i4", 0, MAX_ITEMS - 1)
        fa = int_array("factors", self.factors, "u1", 0, 255)
        va = self._CODEC.check(getattr(self, name))
        if not it.size == fa.size == va.size:
            raise MessageError(
                f"items, factors and {name} must have the same length, got "
                f"{it.size}, {fa.size}, {va.size}"
            )
        if self._SENDER_ID and it.size > U32_MAX:
            raise MessageError(f"a client message holds <= {U32_MAX} reports, got {it.size}")
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
        return HEADER.size + cls._fixed().size + 4 * k + cls._CODEC.nbytes(k)

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
        head, off = unpack_fixed(cls.__name__, payload, cls._fixed())
        k = head[-1]
        body = payload[off:]
        check_length(cls.__name__, body, 4 * k + cls._CODEC.nbytes(k), f"{k} reports")
        index = np.frombuffer(body, dtype="<u4", count=k)
        items = (index >> np.uint32(8)).astype("<i4")
        factors = (index & np.uint32(0xFF)).astype("u1")
        values = cls._CODEC.decode(body[4 * k :], k)
        return cls(*head[:-1], items, factors, values)


@dataclass(frozen=True, eq=False)
class GradientReports(_Reports):
    """One client's FMF-LDP message for one epoch: ``k`` reports ``(item, factor, bit)``.

    ``bits[j] = 1`` means the value ``+B``, 0 means ``-B`` (docs/architecture.md §2).
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


# -- the item-matrix broadcast ---------------------------------------------------------------


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
        v = real_array("matrix", self.matrix, 2, self._DTYPE)
        n, f = v.shape
        integer_field("n_items (matrix rows)", n, 0, MAX_ITEMS)
        integer_field("n_factors (matrix columns)", f, 0, U32_MAX)
        object.__setattr__(self, "matrix", v)
        object.__setattr__(self, "epoch", integer_field("epoch", self.epoch, *I64_RANGE))

    @classmethod
    def serialized_size(cls, n_items: int, n_factors: int) -> int:
        """Bytes of a broadcast of an ``n_items x n_factors`` matrix."""
        width = np.dtype(cls._DTYPE).itemsize
        return HEADER.size + cls._FIXED.size + width * n_items * n_factors

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
        (epoch, n, f), off = unpack_fixed(name, payload, cls._FIXED)
        body = payload[off:]
        size = np.dtype(cls._DTYPE).itemsize
        check_length(name, body, size * n * f, f"a {n} x {f} matrix")
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
