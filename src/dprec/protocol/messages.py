"""Typed protocol messages that serialise to bytes (no pickle).

Wire format (little-endian): a 6-byte header ``b"DPRC"``, format version (uint8), message
kind (uint8), then the kind's fixed fields (``struct``) and its arrays (raw NumPy buffers).
A report's (item, factor) pair travels as one 4-byte index, item << 8 | factor (items below
2^24, factors below 256), and bits are packed 8 per byte (``numpy.packbits``), so a FMF-LDP
report costs 4 bytes and 1 bit, the paper's accounting.

- :class:`GradientReports`: one client's message for one epoch (client id + k reports).
- :class:`ShuffledReports`: what the proxy forwards: reports without any sender field.
- :class:`ItemMatrix`: the server's broadcast of the item factors ``V`` (float32, N x F).
- :class:`ValueReports` / :class:`ShuffledValues`: the same with a float32 value per report,
  for real-valued mechanisms (e.g. the piecewise mechanism): 9 bytes per report.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, fields
from typing import ClassVar, TypeVar

import numpy as np

from dprec.errors import DprecError

__all__ = [
    "MessageError",
    "Message",
    "GradientReports",
    "ShuffledReports",
    "ItemMatrix",
    "MAX_ITEMS",
    "ValueReports",
    "ShuffledValues",
]

MAGIC = b"DPRC"
MAX_ITEMS = 1 << 24
"""Item indices must fit the 24 high bits of a report's 4-byte index."""
VERSION = 1
_HEADER = struct.Struct("<4sBB")

M = TypeVar("M", bound="Message")


class MessageError(DprecError):
    """A byte string is not a valid message of the expected kind."""


def _int_array(name: str, values: object, dtype: str, low: int, high: int) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise DprecError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size and not (np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_):
        raise DprecError(f"{name} must hold integers, got dtype {arr.dtype}")
    if arr.size and (arr.min() < low or arr.max() > high):
        raise DprecError(
            f"{name} must be in [{low}, {high}], got values in [{arr.min()}, {arr.max()}]"
        )
    return np.ascontiguousarray(arr, dtype=np.dtype(dtype))


def _reports(items: object, factors: object, bits: object) -> tuple[np.ndarray, ...]:
    it = _int_array("items", items, "<i4", 0, MAX_ITEMS - 1)
    fa = _int_array("factors", factors, "u1", 0, 255)
    bi = _int_array("bits", bits, "u1", 0, 1)
    if not it.size == fa.size == bi.size:
        raise DprecError(
            "items, factors and bits must have the same length, got "
            f"{it.size}, {fa.size}, {bi.size}"
        )
    return it, fa, bi


def _report_nbytes(k: int) -> int:
    return 4 * k + (k + 7) // 8


def _pack_reports(items: np.ndarray, factors: np.ndarray, bits: np.ndarray) -> bytes:
    index = (items.astype("<u4") << np.uint32(8)) | factors.astype("<u4")
    return index.tobytes() + np.packbits(bits).tobytes()


def _unpack_reports(buf: memoryview, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if len(buf) != _report_nbytes(k):
        raise MessageError(
            f"report payload must be {_report_nbytes(k)} bytes for k={k}, got {len(buf)}"
        )
    index = np.frombuffer(buf, dtype="<u4", count=k, offset=0)
    items = (index >> np.uint32(8)).astype("<i4")
    factors = (index & np.uint32(0xFF)).astype("u1")
    packed = np.frombuffer(buf, dtype="u1", offset=4 * k)
    bits = np.unpackbits(packed, count=k).astype(np.uint8)
    if items.size and items.min() < 0:
        raise MessageError(f"items must be >= 0, got {int(items.min())}")
    return items, factors, bits


class Message:
    """Base: ``to_bytes()``, ``from_bytes()``, ``nbytes``; equality compares array contents."""

    KIND: ClassVar[int] = 0
    _registry: ClassVar[dict[int, type[Message]]] = {}

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if cls.KIND in Message._registry:
            raise TypeError(f"message kind {cls.KIND} registered twice")
        Message._registry[cls.KIND] = cls

    def _payload(self) -> bytes:
        raise NotImplementedError

    @classmethod
    def _parse(cls: type[M], payload: memoryview) -> M:
        raise NotImplementedError

    def to_bytes(self) -> bytes:
        """Header followed by the kind's payload."""
        return _HEADER.pack(MAGIC, VERSION, self.KIND) + self._payload()

    @property
    def nbytes(self) -> int:
        """Size of :meth:`to_bytes` in bytes (computed without serialising)."""
        raise NotImplementedError

    @classmethod
    def from_bytes(cls: type[M], data: bytes | bytearray | memoryview) -> M:
        """Parse ``data``; on ``Message`` itself dispatch on the kind byte."""
        view = memoryview(data).cast("B")
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
            if isinstance(a, np.ndarray):
                if a.dtype != b.dtype or not np.array_equal(a, b):
                    return False
            elif a != b:
                return False
        return True

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, eq=False)
class GradientReports(Message):
    """One client's FMF-LDP message for one epoch: ``k`` reports ``(item, factor, bit)``.

    ``bits[j] = 1`` means the value ``+B``, 0 means ``-B`` (SYSTEMS.md §2, Algorithm 1).
    The ``client_id`` is transport metadata: the proxy strips it.
    """

    KIND: ClassVar[int] = 1
    _FIXED: ClassVar[struct.Struct] = struct.Struct("<qI")

    client_id: int
    items: np.ndarray
    factors: np.ndarray
    bits: np.ndarray

    def __post_init__(self) -> None:
        if int(self.client_id) != self.client_id:
            raise DprecError(f"client_id must be an integer, got {self.client_id}")
        object.__setattr__(self, "client_id", int(self.client_id))
        it, fa, bi = _reports(self.items, self.factors, self.bits)
        object.__setattr__(self, "items", it)
        object.__setattr__(self, "factors", fa)
        object.__setattr__(self, "bits", bi)

    @property
    def k(self) -> int:
        """Number of reports."""
        return int(self.items.size)

    @classmethod
    def serialized_size(cls, k: int) -> int:
        """Bytes of a message holding ``k`` reports (without building it)."""
        return _HEADER.size + cls._FIXED.size + _report_nbytes(k)

    @property
    def nbytes(self) -> int:
        return self.serialized_size(self.k)

    def _payload(self) -> bytes:
        return self._FIXED.pack(self.client_id, self.k) + _pack_reports(
            self.items, self.factors, self.bits
        )

    @classmethod
    def _parse(cls, payload: memoryview) -> GradientReports:
        if len(payload) < cls._FIXED.size:
            raise MessageError(f"GradientReports payload too short: {len(payload)} bytes")
        client_id, k = cls._FIXED.unpack_from(payload)
        items, factors, bits = _unpack_reports(payload[cls._FIXED.size :], k)
        return cls(client_id, items, factors, bits)


@dataclass(frozen=True, eq=False)
class ShuffledReports(Message):
    """A batch of reports as the proxy forwards it: no sender, no order information."""

    KIND: ClassVar[int] = 2
    _FIXED: ClassVar[struct.Struct] = struct.Struct("<Q")

    items: np.ndarray
    factors: np.ndarray
    bits: np.ndarray

    def __post_init__(self) -> None:
        it, fa, bi = _reports(self.items, self.factors, self.bits)
        object.__setattr__(self, "items", it)
        object.__setattr__(self, "factors", fa)
        object.__setattr__(self, "bits", bi)

    def __len__(self) -> int:
        return int(self.items.size)

    @classmethod
    def serialized_size(cls, m: int) -> int:
        """Bytes of a batch holding ``m`` reports."""
        return _HEADER.size + cls._FIXED.size + _report_nbytes(m)

    @property
    def nbytes(self) -> int:
        return self.serialized_size(len(self))

    def _payload(self) -> bytes:
        return self._FIXED.pack(len(self)) + _pack_reports(self.items, self.factors, self.bits)

    @classmethod
    def _parse(cls, payload: memoryview) -> ShuffledReports:
        if len(payload) < cls._FIXED.size:
            raise MessageError(f"ShuffledReports payload too short: {len(payload)} bytes")
        (m,) = cls._FIXED.unpack_from(payload)
        return cls(*_unpack_reports(payload[cls._FIXED.size :], m))


@dataclass(frozen=True, eq=False)
class ItemMatrix(Message):
    """The server's broadcast: item factor matrix ``V`` (float32, ``n_items x n_factors``)."""

    KIND: ClassVar[int] = 3
    _FIXED: ClassVar[struct.Struct] = struct.Struct("<qII")

    matrix: np.ndarray
    epoch: int = 0

    def __post_init__(self) -> None:
        v = np.asarray(self.matrix)
        if v.ndim != 2:
            raise DprecError(f"matrix must be 2-D (n_items x n_factors), got shape {v.shape}")
        if v.size and not np.all(np.isfinite(v)):
            raise DprecError("matrix must be finite, got NaN or inf")
        object.__setattr__(self, "matrix", np.ascontiguousarray(v, dtype="<f4"))
        if int(self.epoch) != self.epoch:
            raise DprecError(f"epoch must be an integer, got {self.epoch}")
        object.__setattr__(self, "epoch", int(self.epoch))

    @classmethod
    def serialized_size(cls, n_items: int, n_factors: int) -> int:
        """Bytes of a broadcast of an ``n_items x n_factors`` matrix."""
        return _HEADER.size + cls._FIXED.size + 4 * n_items * n_factors

    @property
    def nbytes(self) -> int:
        return self.serialized_size(*self.matrix.shape)

    def _payload(self) -> bytes:
        n, f = self.matrix.shape
        return self._FIXED.pack(self.epoch, n, f) + self.matrix.tobytes()

    @classmethod
    def _parse(cls, payload: memoryview) -> ItemMatrix:
        if len(payload) < cls._FIXED.size:
            raise MessageError(f"ItemMatrix payload too short: {len(payload)} bytes")
        epoch, n, f = cls._FIXED.unpack_from(payload)
        body = payload[cls._FIXED.size :]
        if len(body) != 4 * n * f:
            raise MessageError(f"ItemMatrix body must be {4 * n * f} bytes, got {len(body)}")
        matrix = np.frombuffer(body, dtype="<f4").reshape(n, f).copy()
        return cls(matrix, epoch)


def _values(items: object, factors: object, values: object) -> tuple[np.ndarray, ...]:
    it, fa, _ = _reports(items, factors, np.zeros(np.asarray(items).size, np.uint8))
    va = np.ascontiguousarray(np.asarray(values, dtype="<f4").ravel())
    if va.size != it.size:
        raise DprecError(f"items and values must have the same length, got {it.size}, {va.size}")
    if not np.all(np.isfinite(va)):
        raise DprecError("values must be finite")
    return it, fa, va


def _unpack_values(buf: memoryview, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if len(buf) != 9 * k:
        raise MessageError(f"value-report payload must be {9 * k} bytes for k={k}, got {len(buf)}")
    items = np.frombuffer(buf, dtype="<i4", count=k, offset=0).copy()
    factors = np.frombuffer(buf, dtype="u1", count=k, offset=4 * k).copy()
    values = np.frombuffer(buf, dtype="<f4", count=k, offset=5 * k).copy()
    return items, factors, values


@dataclass(frozen=True, eq=False)
class ValueReports(Message):
    """One client's message of ``k`` real-valued reports ``(item, factor, value)``."""

    KIND: ClassVar[int] = 4
    _FIXED: ClassVar[struct.Struct] = struct.Struct("<qI")

    client_id: int
    items: np.ndarray
    factors: np.ndarray
    values: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "client_id", int(self.client_id))
        it, fa, va = _values(self.items, self.factors, self.values)
        object.__setattr__(self, "items", it)
        object.__setattr__(self, "factors", fa)
        object.__setattr__(self, "values", va)

    @property
    def k(self) -> int:
        return int(self.items.size)

    @classmethod
    def serialized_size(cls, k: int) -> int:
        return _HEADER.size + cls._FIXED.size + 9 * k

    @property
    def nbytes(self) -> int:
        return self.serialized_size(self.k)

    def _payload(self) -> bytes:
        return (self._FIXED.pack(self.client_id, self.k) + self.items.tobytes()
                + self.factors.tobytes() + self.values.tobytes())

    @classmethod
    def _parse(cls, payload: memoryview) -> ValueReports:
        client_id, k = cls._FIXED.unpack_from(payload)
        return cls(client_id, *_unpack_values(payload[cls._FIXED.size :], k))


@dataclass(frozen=True, eq=False)
class ShuffledValues(Message):
    """A forwarded batch of real-valued reports: no sender, no order information."""

    KIND: ClassVar[int] = 5
    _FIXED: ClassVar[struct.Struct] = struct.Struct("<Q")

    items: np.ndarray
    factors: np.ndarray
    values: np.ndarray

    def __post_init__(self) -> None:
        it, fa, va = _values(self.items, self.factors, self.values)
        object.__setattr__(self, "items", it)
        object.__setattr__(self, "factors", fa)
        object.__setattr__(self, "values", va)

    def __len__(self) -> int:
        return int(self.items.size)

    @classmethod
    def serialized_size(cls, m: int) -> int:
        return _HEADER.size + cls._FIXED.size + 9 * m

    @property
    def nbytes(self) -> int:
        return self.serialized_size(len(self))

    def _payload(self) -> bytes:
        return (self._FIXED.pack(len(self)) + self.items.tobytes() + self.factors.tobytes()
                + self.values.tobytes())

    @classmethod
    def _parse(cls, payload: memoryview) -> ShuffledValues:
        (m,) = cls._FIXED.unpack_from(payload)
        return cls(*_unpack_values(payload[cls._FIXED.size :], m))
