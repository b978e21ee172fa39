"""The validity circuits of Prio3 (draft-irtf-cfrg-vdaf §7.4): Count, Sum, SumVec,
Histogram, MultihotCountVec, vectorised (one array step per gadget, not per coordinate).

Range-checked integers (§7.4.2): ``0 <= v <= M`` is encoded as ``b = bitlen(M)`` field
elements ``(e_0, ..., e_{b-1})`` in ``{0, 1}`` with weights ``1, 2, ..., 2^(b-2)`` and
``M - (2^(b-1) - 1)``; every bit vector decodes into ``[0, M]`` and every value there has an
encoding. The decoding is linear, so it runs on shares.

The bit test of SumVec, Histogram and MultihotCountVec: call ``i`` of
``ParallelSum(Mul, c)`` gets ``(r_i^j m_{ic+j}, m_{ic+j} - 1/s)`` for ``j = 1..c`` (``r_i``
joint randomness, ``s`` shares, entries past the end 0), so the sum over calls is
``sum_i sum_j r_i^j m (m - 1)``: zero for bits, non-zero but w.p. ``c / |F|`` otherwise.
"""

from __future__ import annotations

import numpy as np

from dprec.protocol.secure_sum.vdaf.field import Field
from dprec.protocol.secure_sum.vdaf.flp import Circuit
from dprec.protocol.secure_sum.vdaf.gadgets import Mul, ParallelSum, PolyEval

__all__ = ["Count", "Histogram", "MultihotCountVec", "Sum", "SumVec", "bit_test_inputs",
           "decode_range_checked", "encode_range_checked", "range_checked_weights"]


def range_checked_weights(field: type[Field], max_value: int) -> np.ndarray:
    """The weights ``1, 2, ..., 2^(b-2), M - (2^(b-1) - 1)`` of the encoding."""
    bits = int(max_value).bit_length()
    weights = [1 << k for k in range(bits - 1)] + [max_value - ((1 << (bits - 1)) - 1)]
    return field.from_ints(weights)


def encode_range_checked(field: type[Field], values: np.ndarray, max_value: int
                         ) -> np.ndarray:
    """The encodings of the integers ``values`` (each in ``[0, M]``), concatenated."""
    v = np.asarray(values, dtype=np.int64).ravel()
    if (v < 0).any() or (v > max_value).any():
        raise ValueError(f"a value lies outside [0, {max_value}]")
    bits = int(max_value).bit_length()
    all_ones = (1 << (bits - 1)) - 1
    big = v > all_ones
    rest = np.where(big, v - (max_value - all_ones), v)
    low = (rest[:, None] >> np.arange(bits - 1)[None, :]) & 1
    encoded = np.concatenate([low, big[:, None].astype(np.int64)], axis=1)
    return field.from_ints(encoded.ravel())


def decode_range_checked(field: type[Field], encoded: np.ndarray, max_value: int
                         ) -> np.ndarray:
    """The values of consecutive encodings (linear: works on shares)."""
    weights = range_checked_weights(field, max_value)
    return field.matvec(np.asarray(encoded).reshape(-1, len(weights)), weights)


def bit_test_inputs(field: type[Field], values: np.ndarray, joint_rand: np.ndarray,
                    chunk: int, calls: int, shares_inv: np.ndarray) -> np.ndarray:
    """The ``(calls, 2 chunk)`` inputs of ``ParallelSum(Mul, chunk)`` testing that every
    entry of ``values`` is a bit (module docstring)."""
    m = field.zeros(calls * chunk)
    m[:len(values)] = values
    m = m.reshape(calls, chunk)
    powers = field.power_table(np.asarray(joint_rand[:calls]), chunk, field.from_ints([1]))
    x = field.zeros((calls, 2 * chunk))
    x[:, 0::2] = field.mul(powers, m)
    x[:, 1::2] = field.sub(m, shares_inv)
    return x


class Count(Circuit):
    """``m (m - 1) = 0`` with one Mul: the measurement is 0 or 1."""

    MEAS_LEN = 1
    JOINT_RAND_LEN = 0
    OUTPUT_LEN = 1
    EVAL_OUTPUT_LEN = 1

    def __init__(self, field: type[Field]) -> None:
        self.field = field
        self.GADGETS = [Mul()]
        self.GADGET_CALLS = [1]

    def encode(self, measurement: object) -> np.ndarray:
        if measurement not in (0, 1, True, False):
            raise ValueError("a count is 0 or 1")
        return self.field.from_ints([int(measurement)])

    def gadget_inputs(self, meas: np.ndarray, joint_rand: np.ndarray, num_shares: int
                      ) -> list[np.ndarray]:
        return [np.stack([meas[:1], meas[:1]], axis=1)]

    def outputs(self, meas: np.ndarray, joint_rand: np.ndarray, num_shares: int,
                gadget_outputs: list[np.ndarray]) -> np.ndarray:
        return self.field.sub(gadget_outputs[0][:1], meas[:1])

    def truncate(self, meas: np.ndarray) -> np.ndarray:
        return meas

    def decode(self, output: np.ndarray, num_measurements: int) -> object:
        return int(output[0])


class Sum(Circuit):
    """``0 <= v <= max_measurement``: every encoding bit ``e`` has ``e^2 - e = 0``
    (``PolyEval([0, -1, 1])``, one call per bit, one output per bit)."""

    JOINT_RAND_LEN = 0
    OUTPUT_LEN = 1

    def __init__(self, field: type[Field], max_measurement: int) -> None:
        self.field = field
        self.max_measurement = int(max_measurement)
        self.bits = self.max_measurement.bit_length()
        if 2 ** self.bits >= field.MODULUS:
            raise ValueError("bound exceeds field modulus")
        self.GADGETS = [PolyEval([0, -1, 1])]
        self.GADGET_CALLS = [self.bits]
        self.MEAS_LEN = self.bits
        self.EVAL_OUTPUT_LEN = self.bits

    def encode(self, measurement: object) -> np.ndarray:
        return encode_range_checked(self.field, np.array([int(measurement)]),
                                    self.max_measurement)

    def gadget_inputs(self, meas: np.ndarray, joint_rand: np.ndarray, num_shares: int
                      ) -> list[np.ndarray]:
        return [np.asarray(meas).reshape(-1, 1)]

    def outputs(self, meas: np.ndarray, joint_rand: np.ndarray, num_shares: int,
                gadget_outputs: list[np.ndarray]) -> np.ndarray:
        return gadget_outputs[0]

    def truncate(self, meas: np.ndarray) -> np.ndarray:
        return decode_range_checked(self.field, meas, self.max_measurement)

    def decode(self, output: np.ndarray, num_measurements: int) -> object:
        return int(output[0])


class _ChunkedBits(Circuit):
    """Shared by the circuits whose first output is the bit test of ``MEAS_LEN`` entries."""

    chunk_length: int

    def _setup(self, field: type[Field], meas_len: int, chunk_length: int) -> None:
        if chunk_length <= 0:
            raise ValueError("invalid chunk_length")
        self.field = field
        self.chunk_length = int(chunk_length)
        self.MEAS_LEN = meas_len
        calls = (meas_len + chunk_length - 1) // chunk_length
        self.GADGETS = [ParallelSum(Mul(), self.chunk_length)]
        self.GADGET_CALLS = [calls]
        self.JOINT_RAND_LEN = calls

    def gadget_inputs(self, meas: np.ndarray, joint_rand: np.ndarray, num_shares: int
                      ) -> list[np.ndarray]:
        return [bit_test_inputs(self.field, meas, joint_rand, self.chunk_length,
                                self.GADGET_CALLS[0], self.shares_inv(num_shares))]

    def bit_test(self, gadget_outputs: list[np.ndarray]) -> np.ndarray:
        return self.field.sum(gadget_outputs[0])

    def decode(self, output: np.ndarray, num_measurements: int) -> object:
        return [int(v) for v in np.asarray(output)]


class SumVec(_ChunkedBits):
    """``length`` entries, each in ``[0, max_measurement]`` (range-checked encodings)."""

    EVAL_OUTPUT_LEN = 1

    def __init__(self, field: type[Field], length: int, max_measurement: int,
                 chunk_length: int) -> None:
        if length <= 0 or max_measurement <= 0:
            raise ValueError("invalid length or max_measurement")
        self.length = int(length)
        self.max_measurement = int(max_measurement)
        self.bits = self.max_measurement.bit_length()
        if 2 ** self.bits >= field.MODULUS:
            raise ValueError("bound exceeds field modulus")
        self._setup(field, self.length * self.bits, chunk_length)
        self.OUTPUT_LEN = self.length

    def encode(self, measurement: object) -> np.ndarray:
        v = np.asarray(measurement, dtype=np.int64)
        if v.shape != (self.length,):
            raise ValueError("incorrect measurement length")
        return encode_range_checked(self.field, v, self.max_measurement)

    def outputs(self, meas: np.ndarray, joint_rand: np.ndarray, num_shares: int,
                gadget_outputs: list[np.ndarray]) -> np.ndarray:
        return self.bit_test(gadget_outputs)

    def truncate(self, meas: np.ndarray) -> np.ndarray:
        return decode_range_checked(self.field, meas, self.max_measurement)


class Histogram(_ChunkedBits):
    """A one-hot vector of ``length`` buckets: bits that sum to one."""

    EVAL_OUTPUT_LEN = 2

    def __init__(self, field: type[Field], length: int, chunk_length: int) -> None:
        if length <= 0:
            raise ValueError("invalid length")
        self.length = int(length)
        self._setup(field, self.length, chunk_length)
        self.OUTPUT_LEN = self.length

    def encode(self, measurement: object) -> np.ndarray:
        v = np.zeros(self.length, dtype=np.int64)
        v[int(measurement)] = 1
        return self.field.from_ints(v)

    def outputs(self, meas: np.ndarray, joint_rand: np.ndarray, num_shares: int,
                gadget_outputs: list[np.ndarray]) -> np.ndarray:
        total = self.field.sub(self.field.sum(meas), self.shares_inv(num_shares))
        return np.concatenate([self.bit_test(gadget_outputs), total])

    def truncate(self, meas: np.ndarray) -> np.ndarray:
        return meas


class MultihotCountVec(_ChunkedBits):
    """A bit vector of ``length`` entries with at most ``max_weight`` ones: the bits, and a
    range-checked claimed weight that must equal their sum."""

    EVAL_OUTPUT_LEN = 2

    def __init__(self, field: type[Field], length: int, max_weight: int,
                 chunk_length: int) -> None:
        if length <= 0 or not 0 < max_weight <= length:
            raise ValueError("invalid length or max_weight")
        if field.MODULUS <= length:
            raise ValueError("length is too large for the field")
        self.length = int(length)
        self.max_weight = int(max_weight)
        self._setup(field, self.length + self.max_weight.bit_length(), chunk_length)
        self.OUTPUT_LEN = self.length

    def encode(self, measurement: object) -> np.ndarray:
        v = np.asarray(measurement, dtype=np.int64)
        if v.shape != (self.length,):
            raise ValueError("invalid Client measurement length")
        weight = encode_range_checked(self.field, np.array([int(v.sum())]), self.max_weight)
        return np.concatenate([self.field.from_ints(v), weight])

    def outputs(self, meas: np.ndarray, joint_rand: np.ndarray, num_shares: int,
                gadget_outputs: list[np.ndarray]) -> np.ndarray:
        f = self.field
        weight = f.sum(meas[:self.length])
        claimed = decode_range_checked(f, meas[self.length:], self.max_weight)
        return np.concatenate([self.bit_test(gadget_outputs), f.sub(weight, claimed)])

    def truncate(self, meas: np.ndarray) -> np.ndarray:
        return meas[:self.length]
