"""The prime fields of draft-irtf-cfrg-vdaf §6.1 (Field64, Field128) as vector arithmetic.

A field is a class with class methods over arrays of its elements (never one Python object
per element):

- :class:`Field64`, ``p = 2^32 (2^32 - 1) + 1``, generator ``7^(2^32 - 1)`` of order
  ``2^32``, 8-byte little-endian encoding: ``uint64`` arrays and numba kernels
  (:mod:`.field64_kernels`). The field of dprec's own circuits.
- :class:`Field128`, ``p = 2^66 * 4611686018427387897 + 1``, generator
  ``7^4611686018427387897`` of order ``2^66``, 16-byte encoding: NumPy object arrays of
  Python integers (exact, slower; the spec's field for SumVec, Histogram and
  MultihotCountVec, kept for conformance with the published test vectors).

Every array a method returns holds canonical representatives in ``[0, p)``.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from dprec.protocol.secure_sum.errors import MalformedUploadError
from dprec.protocol.secure_sum.vdaf import field64_kernels as k64

__all__ = ["Field", "Field64", "Field128"]


class Field:
    """An NTT-friendly prime field (draft-irtf-cfrg-vdaf §6.1): the interface."""

    MODULUS: int
    ENCODED_SIZE: int
    GEN_ORDER: int
    GENERATOR: int
    dtype: object

    @classmethod
    def from_ints(cls, values: object) -> np.ndarray:
        """Integers (any sign, a list or an integer array) reduced mod ``p``."""
        raise NotImplementedError

    @classmethod
    def to_ints(cls, x: np.ndarray) -> list[int]:
        """The canonical representatives as Python integers."""
        return [int(v) for v in np.asarray(x).ravel()]

    @classmethod
    def centred(cls, x: np.ndarray) -> np.ndarray:
        """The representatives in ``(-p/2, p/2]`` as ``int64`` (for values known small)."""
        raise NotImplementedError

    @classmethod
    def zeros(cls, shape: int | tuple[int, ...]) -> np.ndarray:
        """The zero vector."""
        return np.zeros(shape, dtype=cls.dtype) if cls.dtype is not object else \
            np.full(shape, 0, dtype=object)

    @classmethod
    def add(cls, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    @classmethod
    def sub(cls, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    @classmethod
    def mul(cls, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    @classmethod
    def sum_rows(cls, x: np.ndarray) -> np.ndarray:
        """The sum of each row of a 2-D array."""
        raise NotImplementedError

    @classmethod
    def prod_rows(cls, x: np.ndarray) -> np.ndarray:
        """The product of each row of a 2-D array."""
        raise NotImplementedError

    @classmethod
    def matvec(cls, m: np.ndarray, v: np.ndarray) -> np.ndarray:
        """``m @ v``."""
        raise NotImplementedError

    @classmethod
    def inv(cls, x: np.ndarray) -> np.ndarray:
        """Elementwise inverse of a 1-D array of non-zero elements."""
        raise NotImplementedError

    @classmethod
    def encode(cls, x: np.ndarray) -> bytes:
        """``encode_vec``: each element as ``ENCODED_SIZE`` little-endian bytes."""
        raise NotImplementedError

    @classmethod
    def decode(cls, data: bytes) -> np.ndarray:
        """``decode_vec``; raises :class:`MalformedUploadError` on a bad length or an
        element ``>= p``."""
        raise NotImplementedError

    @classmethod
    def decode_unchecked(cls, data: bytes) -> np.ndarray:
        """Little-endian words of ``ENCODED_SIZE`` bytes as integers, not reduced (for
        rejection sampling)."""
        raise NotImplementedError

    @classmethod
    def below_modulus(cls, x: np.ndarray) -> np.ndarray:
        """The mask of the words ``< p``."""
        return np.asarray(x < cls.MODULUS if cls.dtype is object
                          else x < np.uint64(cls.MODULUS), dtype=bool)

    @classmethod
    def sum(cls, x: np.ndarray) -> np.ndarray:
        """The sum of a 1-D array, as a 1-element array."""
        return cls.sum_rows(np.asarray(x).reshape(1, -1))

    @classmethod
    def neg(cls, a: np.ndarray) -> np.ndarray:
        return cls.sub(cls.zeros(np.shape(a)), a)

    @classmethod
    def root(cls, n: int) -> int:
        """A primitive ``n``-th root of unity, ``n`` a power of two: ``g^(GEN_ORDER / n)``
        (so ``root(2n)^2 = root(n)``, as the spec's ``nth_root``)."""
        return _root(cls, n)

    @classmethod
    def powers(cls, x: int, n: int) -> np.ndarray:
        """``[1, x, x^2, ..., x^(n-1)]``, by repeated doubling (``log n`` vector steps)."""
        return _powers(cls, int(x), int(n)).copy()

    @classmethod
    def _powers(cls, x: int, n: int) -> np.ndarray:
        out = cls.from_ints([1])
        while out.size < n:
            step = pow(int(x), out.size, cls.MODULUS)
            out = np.concatenate([out, cls.mul(out, cls.from_ints([step]))])
        return out[:n]

    @classmethod
    def butterflies(cls, a: np.ndarray, n: int, first: int = 2) -> np.ndarray:
        """The radix-2 NTT levels ``m = first, 2 first, ..., n`` on the rows of ``a`` (each
        row in bit-reversed order, the levels below ``first`` done): one vector step per
        level."""
        m = first
        while m <= n:
            blocks = a.reshape(a.shape[0], n // m, 2, m // 2)
            u = blocks[:, :, 0, :]
            v = cls.mul(blocks[:, :, 1, :], cls.powers(cls.root(m), m // 2))
            a = np.stack([cls.add(u, v), cls.sub(u, v)], axis=2).reshape(a.shape[0], n)
            m *= 2
        return a

    @classmethod
    def power_table(cls, r: np.ndarray, count: int, scale: np.ndarray) -> np.ndarray:
        """``out[i, j] = scale * r_i^(j + 1)``, ``j < count``."""
        out = cls.zeros((len(r), count))
        out[:, 0] = cls.mul(r, scale)
        for j in range(1, count):
            out[:, j] = cls.mul(out[:, j - 1], r)
        return out

    @classmethod
    def weighted_range(cls, x0: np.ndarray, x1: np.ndarray, low: int, high: int
                       ) -> np.ndarray:
        """``x0 * prod_{k=low}^{high} (x1 - k)`` elementwise."""
        out = np.asarray(x0).copy()
        for shift in cls.from_ints(list(range(low, high + 1))):
            out = cls.mul(out, cls.sub(x1, shift))
        return out

    @classmethod
    def prod_differences(cls, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``out[i] = prod_{j: b_j != a_i} (a_i - b_j)``."""
        diff = cls.sub(np.asarray(a)[:, None], np.asarray(b)[None, :])
        diff = np.where(np.asarray(a)[:, None] == np.asarray(b)[None, :],
                        cls.from_ints([1])[0], diff)
        return cls.prod_rows(diff)

    @classmethod
    def check_decoded(cls, data: bytes) -> int:
        if len(data) % cls.ENCODED_SIZE:
            raise MalformedUploadError(
                f"a vector of {cls.__name__} elements has a multiple of {cls.ENCODED_SIZE} "
                f"bytes, got {len(data)}")
        return len(data) // cls.ENCODED_SIZE


@lru_cache(maxsize=256)
def _powers(field: type[Field], x: int, n: int) -> np.ndarray:
    return field._powers(x, n)


@lru_cache(maxsize=256)
def _root(field: type[Field], n: int) -> int:
    if n < 1 or n & (n - 1) or field.GEN_ORDER % n:
        raise ValueError(f"no root of unity of order {n} in {field.__name__}")
    return pow(field.GENERATOR, field.GEN_ORDER // n, field.MODULUS)


@lru_cache(maxsize=64)
def _twiddle_table(n: int) -> np.ndarray:
    """Field64's ``w_m^j`` for every NTT level ``m <= n``, level ``m`` at ``m/2 - 1``."""
    levels = []
    m = 2
    while m <= n:
        levels.append(Field64.powers(Field64.root(m), m // 2))
        m *= 2
    return np.concatenate(levels) if levels else np.zeros(0, dtype=np.uint64)


class Field64(Field):
    """GF(2^32 * 4294967295 + 1) on ``uint64`` arrays (numba kernels)."""

    MODULUS = 2**32 * 4294967295 + 1
    ENCODED_SIZE = 8
    GEN_ORDER = 2**32
    GENERATOR = pow(7, 4294967295, MODULUS)
    dtype = np.uint64

    @classmethod
    def from_ints(cls, values: object) -> np.ndarray:
        if not isinstance(values, np.ndarray):
            return np.array([int(v) % cls.MODULUS for v in values], dtype=np.uint64)
        arr = values
        if arr.dtype == object:
            return np.array([int(v) % cls.MODULUS for v in arr.ravel()],
                            dtype=np.uint64).reshape(arr.shape)
        if arr.dtype.kind == "u":
            a = arr.astype(np.uint64)
            return np.where(a >= np.uint64(cls.MODULUS), a - np.uint64(cls.MODULUS), a)
        a = arr.astype(np.int64)
        magnitude = np.abs(a).astype(np.uint64)
        return np.where(a < 0, k64.neg(magnitude), magnitude)

    @classmethod
    def centred(cls, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.uint64)
        half = np.uint64(cls.MODULUS // 2)
        return np.where(x > half, -(k64.neg(x).astype(np.int64)), x.astype(np.int64))

    @classmethod
    def add(cls, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return k64.add(a, b)

    @classmethod
    def sub(cls, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return k64.sub(a, b)

    @classmethod
    def mul(cls, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return k64.mul(a, b)

    @classmethod
    def neg(cls, a: np.ndarray) -> np.ndarray:
        return k64.neg(a)

    @classmethod
    def prod_differences(cls, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return k64.prod_differences(np.ascontiguousarray(a, dtype=np.uint64),
                                    np.ascontiguousarray(b, dtype=np.uint64))

    @classmethod
    def butterflies(cls, a: np.ndarray, n: int, first: int = 2) -> np.ndarray:
        a = np.ascontiguousarray(a, dtype=np.uint64)
        k64.butterflies(a, _twiddle_table(n), first)
        return a

    @classmethod
    def power_table(cls, r: np.ndarray, count: int, scale: np.ndarray) -> np.ndarray:
        return k64.power_table(np.ascontiguousarray(r, dtype=np.uint64), count,
                               np.uint64(np.ravel(scale)[0]))

    @classmethod
    def weighted_range(cls, x0: np.ndarray, x1: np.ndarray, low: int, high: int
                       ) -> np.ndarray:
        total = low + high
        pairs = [k * (total - k) for k in range(low, (low + high + 1) // 2)]
        odd = (high - low + 1) % 2 == 1
        shape = np.shape(x0)
        return k64.weighted_range(np.ascontiguousarray(x0, dtype=np.uint64).ravel(),
                                  np.ascontiguousarray(x1, dtype=np.uint64).ravel(),
                                  np.uint64(total % cls.MODULUS), cls.from_ints(pairs),
                                  np.uint64(total // 2 % cls.MODULUS), odd).reshape(shape)

    @classmethod
    def sum_rows(cls, x: np.ndarray) -> np.ndarray:
        return k64.sum_rows(np.ascontiguousarray(x, dtype=np.uint64))

    @classmethod
    def prod_rows(cls, x: np.ndarray) -> np.ndarray:
        return k64.prod_rows(np.ascontiguousarray(x, dtype=np.uint64))

    @classmethod
    def matvec(cls, m: np.ndarray, v: np.ndarray) -> np.ndarray:
        return k64.matvec(np.ascontiguousarray(m, dtype=np.uint64),
                          np.ascontiguousarray(v, dtype=np.uint64))

    @classmethod
    def inv(cls, x: np.ndarray) -> np.ndarray:
        return k64.inv(np.ascontiguousarray(x, dtype=np.uint64))

    @classmethod
    def encode(cls, x: np.ndarray) -> bytes:
        return np.ascontiguousarray(x, dtype="<u8").tobytes()

    @classmethod
    def decode_unchecked(cls, data: bytes) -> np.ndarray:
        cls.check_decoded(data)
        return np.frombuffer(data, dtype="<u8").astype(np.uint64)

    @classmethod
    def decode(cls, data: bytes) -> np.ndarray:
        x = cls.decode_unchecked(data)
        if (x >= np.uint64(cls.MODULUS)).any():
            raise MalformedUploadError("a Field64 element is >= p: not a field element")
        return x


class Field128(Field):
    """GF(2^66 * 4611686018427387897 + 1) on object arrays of Python integers."""

    MODULUS = 2**66 * 4611686018427387897 + 1
    ENCODED_SIZE = 16
    GEN_ORDER = 2**66
    GENERATOR = pow(7, 4611686018427387897, MODULUS)
    dtype = object

    @classmethod
    def _wrap(cls, x: object) -> np.ndarray:
        return np.asarray(x, dtype=object)

    @classmethod
    def from_ints(cls, values: object) -> np.ndarray:
        if not isinstance(values, np.ndarray):
            return cls._wrap([int(v) % cls.MODULUS for v in values])
        return cls._wrap(values.astype(object) % cls.MODULUS)

    @classmethod
    def centred(cls, x: np.ndarray) -> np.ndarray:
        half = cls.MODULUS // 2
        return np.array([v - cls.MODULUS if v > half else v for v in np.ravel(x)],
                        dtype=np.int64)

    @classmethod
    def add(cls, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return cls._wrap((cls._wrap(a) + b) % cls.MODULUS)

    @classmethod
    def sub(cls, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return cls._wrap((cls._wrap(a) - b) % cls.MODULUS)

    @classmethod
    def mul(cls, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return cls._wrap((cls._wrap(a) * b) % cls.MODULUS)

    @classmethod
    def sum_rows(cls, x: np.ndarray) -> np.ndarray:
        x = cls._wrap(x)
        if x.shape[1] == 0:
            return cls.zeros(x.shape[0])
        return cls._wrap(x.sum(axis=1) % cls.MODULUS)

    @classmethod
    def prod_rows(cls, x: np.ndarray) -> np.ndarray:
        x = cls._wrap(x)
        out = np.full(x.shape[0], 1, dtype=object)
        for j in range(x.shape[1]):
            out = (out * x[:, j]) % cls.MODULUS
        return cls._wrap(out)

    @classmethod
    def matvec(cls, m: np.ndarray, v: np.ndarray) -> np.ndarray:
        return cls.sum_rows(cls._wrap(m) * cls._wrap(v)[None, :])

    @classmethod
    def inv(cls, x: np.ndarray) -> np.ndarray:
        return cls._wrap([pow(int(v), cls.MODULUS - 2, cls.MODULUS) for v in np.ravel(x)])

    @classmethod
    def encode(cls, x: np.ndarray) -> bytes:
        x = cls._wrap(x).ravel()
        lo = (x & (2**64 - 1)).astype(np.uint64)
        hi = (x >> 64).astype(np.uint64)
        return np.stack([lo, hi], axis=1).astype("<u8").tobytes()

    @classmethod
    def decode_unchecked(cls, data: bytes) -> np.ndarray:
        cls.check_decoded(data)
        words = np.frombuffer(data, dtype="<u8").reshape(-1, 2)
        return cls._wrap(words[:, 0].astype(object) + (words[:, 1].astype(object) << 64))

    @classmethod
    def decode(cls, data: bytes) -> np.ndarray:
        x = cls.decode_unchecked(data)
        if any(v >= cls.MODULUS for v in x):
            raise MalformedUploadError("a Field128 element is >= p: not a field element")
        return cls._wrap(x)
