"""dprec's validity circuit for the integer vectors its clients send (issue 31 §1), on
Field64. Not in the spec: built from its FLP and gadgets, with one gadget of dprec's own.

:class:`BoundedVector` accepts ``y in Z^d`` with

- every coordinate in ``[low, high]``;
- optionally the sum in ``[sum_low, sum_high]`` (dp-pop's k-hot weight, noise included);
- optionally ``||y||_2^2 <= l2_bound_sq`` (dpals' and dp-fedavg's L2 clip, after
  quantisation and noise).

The coordinate range is proved one of two ways (``range_proof``):

- ``"polynomial"``: ``y_j`` is one field element, and
  ``ParallelSum(WeightedRange(low, high), c)`` computes ``sum_j r_i^j prod_k (y_j - k)``
  (joint randomness ``r_i`` per call): zero for an in-range vector, non-zero but w.p.
  ``c / |F|`` otherwise. One element per coordinate on the wire; the prover's cost grows
  as ``(high - low)^2 d``. The default while ``high - low + 2 <= 64``.
- ``"digits"``: ``y_j - low`` in base ``B = ceil((high - low + 1)^(1/L))`` as ``L`` digits,
  each tested by ``WeightedRange(0, B - 1)``: ``L`` elements per coordinate and a gadget of
  degree ``B + 1``. The range checked is ``[low, low + B^L - 1]`` (``high`` is raised to
  that, a few values past the requested bound at most ``B^L - (high - low + 1)``).
- ``"bits"``: ``y_j - low`` as a range-checked bit encoding (draft §7.4.2) under the spec's
  bit test, ``bitlen(high - low)`` elements per coordinate.

Each bound is an equality with a range-checked slack the client supplies: ``sum_j y_j -
sum_low = e_s`` with ``e_s in [0, sum_high - sum_low]``; ``||y||^2 + e_2 = l2_bound_sq``
with ``e_2 in [0, l2_bound_sq]``; ``||y||^2`` is the sum of the outputs of
``ParallelSum(Mul, c)`` on ``(y_j, y_j)``. The slack bits share the bit test. No value can
wrap: ``d max(|low|, |high|)^2`` and every bound are far below ``p ~ 2^64`` (checked).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from dprec.protocol.secure_sum.vdaf.circuits import (
    bit_test_inputs,
    decode_range_checked,
    encode_range_checked,
    range_checked_weights,
)
from dprec.protocol.secure_sum.vdaf.field import Field, Field64
from dprec.protocol.secure_sum.vdaf.flp import Circuit, gadget_poly_len, wire_poly_len
from dprec.protocol.secure_sum.vdaf.gadgets import Gadget, Mul, ParallelSum, WeightedRange

__all__ = ["MAX_POLYNOMIAL_DEGREE", "REFUSALS", "BoundedVector", "best_chunk"]

MAX_POLYNOMIAL_DEGREE = 64
"""Largest range-gadget degree chosen by default (prover cost ~ degree^2 d)."""

REFUSALS = {"range": "a coordinate lies outside the checked range",
            "sum": "the sum lies outside the checked sum range",
            "l2": "the squared L2 norm exceeds the checked bound"}
"""Why a vector breaks :class:`BoundedVector` (:meth:`BoundedVector.refusals`), and what
that says."""


def _integer_root_ceil(n: int, k: int) -> int:
    """The smallest integer ``b`` with ``b^k >= n``."""
    b = max(1, round(n ** (1.0 / k)))
    while b ** k < n:
        b += 1
    while b > 1 and (b - 1) ** k >= n:
        b -= 1
    return b


def best_chunk(length: int, arity: int, degree: int) -> int:
    """The chunk ``c`` minimising the proof length ``arity c + D (p - 1) + 1`` of
    ``ParallelSum(G, c)`` over ``length`` entries (``p = next_pow2(1 + ceil(length/c))``)."""
    def cost(c: int) -> int:
        return arity * c + gadget_poly_len(degree, wire_poly_len(-(-length // c)))
    return min(range(1, length + 1), key=lambda c: (cost(c), c))


class BoundedVector(Circuit):
    """Coordinates in ``[low, high]``, optional sum range and L2 bound (module docstring)."""

    def __init__(self, dimension: int, low: int, high: int, *,
                 sum_range: tuple[int, int] | None = None, l2_bound_sq: int | None = None,
                 range_proof: Literal["polynomial", "digits", "bits"] | None = None,
                 digits: int = 2, field: type[Field] = Field64) -> None:
        if dimension < 1 or high < low:
            raise ValueError("need dimension >= 1 and low <= high")
        self.field, self.dimension, self.low, self.high = field, int(dimension), int(low), \
            int(high)
        if range_proof is None:
            range_proof = "polynomial" if high - low + 2 <= MAX_POLYNOMIAL_DEGREE else "bits"
        if range_proof not in ("polynomial", "digits", "bits"):
            raise ValueError("range_proof is 'polynomial', 'digits' or 'bits', got "
                             f"{range_proof!r}")
        self.range_proof = range_proof
        self.digits, self.base = 1, self.high - self.low + 1
        if range_proof == "digits":
            if digits < 2:
                raise ValueError("the digit decomposition needs digits >= 2")
            self.digits = int(digits)
            self.base = _integer_root_ceil(self.high - self.low + 1, self.digits)
            self.high = self.low + self.base ** self.digits - 1  # the range actually checked
        self.sum_range = None if sum_range is None else (int(sum_range[0]), int(sum_range[1]))
        self.l2_bound_sq = None if l2_bound_sq is None else int(l2_bound_sq)
        largest = max(abs(low), abs(high))
        if dimension * largest ** 2 >= field.MODULUS // 4 or (
                self.l2_bound_sq is not None and self.l2_bound_sq >= field.MODULUS // 4):
            raise ValueError("the bounds could wrap the field: use smaller ranges")
        if self.sum_range is not None and self.sum_range[1] < self.sum_range[0]:
            raise ValueError("empty sum range")
        self._layout()

    def _layout(self) -> None:
        d = self.dimension
        self.coord_bits = (self.high - self.low).bit_length() if self.range_proof == "bits" \
            else 0
        self.coord_width = self.coord_bits or self.digits
        self.coord_weights = None
        if self.range_proof == "bits":
            self.coord_weights = range_checked_weights(self.field, self.high - self.low)
        elif self.range_proof == "digits":
            self.coord_weights = self.field.from_ints(
                [self.base ** k for k in range(self.digits)])
        self.sum_max = None if self.sum_range is None else self.sum_range[1] - self.sum_range[0]
        self.sum_bits = 0 if not self.sum_max else self.sum_max.bit_length()
        self.l2_bits = 0 if not self.l2_bound_sq else self.l2_bound_sq.bit_length()
        coords = d * self.coord_width
        self.MEAS_LEN = coords + self.sum_bits + self.l2_bits
        self.OUTPUT_LEN = d
        gadgets: list[Gadget] = []
        calls: list[int] = []
        self.roles: list[str] = []
        jr = 0
        if self.range_proof != "bits":
            g = WeightedRange(self.low, self.high) if self.digits == 1 else \
                WeightedRange(0, self.base - 1)
            c = best_chunk(coords, 2, g.DEGREE)
            gadgets.append(ParallelSum(g, c))
            calls.append(-(-coords // c))
            self.roles.append("range")
            jr += calls[-1]
        bit_count = (coords if self.coord_bits else 0) + self.sum_bits + self.l2_bits
        self.bit_offset = 0 if self.coord_bits else coords
        if bit_count:
            c = best_chunk(bit_count, 2, 2)
            gadgets.append(ParallelSum(Mul(), c))
            calls.append(-(-bit_count // c))
            self.roles.append("bits")
            jr += calls[-1]
        self.bit_count = bit_count
        if self.l2_bound_sq is not None:
            c = best_chunk(d, 2, 2)
            gadgets.append(ParallelSum(Mul(), c))
            calls.append(-(-d // c))
            self.roles.append("squares")
        self.GADGETS, self.GADGET_CALLS, self.JOINT_RAND_LEN = gadgets, calls, jr
        self.EVAL_OUTPUT_LEN = len(self.roles) - ("squares" in self.roles) + \
            (self.sum_range is not None) + (self.l2_bound_sq is not None)

    # -- the predicate the proof enforces, on plaintext ------------------------------------
    def refusals(self, ys: np.ndarray) -> np.ndarray:
        """Per row of the integer matrix ``ys`` (m x d), the first bound the circuit refuses
        it for, in the order ``"range"`` (a coordinate outside ``[low, high]``, ``high`` as
        checked), ``"sum"`` (outside ``sum_range``), ``"l2"`` (``||y||^2 > l2_bound_sq``);
        ``""`` where every bound holds: exactly the vectors :meth:`encode` encodes, whose
        proofs verify (the bounds are the circuit's own attributes). Vectorised, for the
        in-process simulation, which sees the plaintext the proof hides."""
        ys = np.asarray(ys)
        if ys.ndim != 2 or ys.shape[1] != self.dimension or not (
                np.issubdtype(ys.dtype, np.integer) or ys.size == 0):
            raise ValueError(f"contributions are integer vectors of {self.dimension}")
        ys = ys.astype(np.int64)
        why = np.full(len(ys), "", dtype=object)
        inside = ((ys >= self.low) & (ys <= self.high)).all(axis=1)
        clipped = np.clip(ys, self.low, self.high)  # in range: no int64 overflow below
        if self.l2_bound_sq is not None:
            why[np.einsum("ij,ij->i", clipped, clipped) > self.l2_bound_sq] = "l2"
        if self.sum_range is not None:
            total = clipped.sum(axis=1)
            why[(total < self.sum_range[0]) | (total > self.sum_range[1])] = "sum"
        why[~inside] = "range"
        return why

    # -- the client's encoding ------------------------------------------------------------
    def encode(self, measurement: object) -> np.ndarray:
        """The field encoding of the integer vector ``y``; ``ValueError`` if ``y`` breaks a
        bound (an honest client never sends such a vector)."""
        y = np.asarray(measurement)
        if y.shape != (self.dimension,) or not np.issubdtype(y.dtype, np.integer):
            raise ValueError(f"a contribution is an integer vector of {self.dimension}")
        y = y.astype(np.int64)
        why = self.refusals(y[None, :])[0]
        if why:
            raise ValueError(REFUSALS[why])
        f = self.field
        if self.range_proof == "polynomial":
            parts = [f.from_ints(y)]
        elif self.range_proof == "bits":
            parts = [encode_range_checked(f, y - self.low, self.high - self.low)]
        else:
            places = self.base ** np.arange(self.digits, dtype=np.int64)
            parts = [f.from_ints((((y - self.low)[:, None] // places[None, :]) % self.base
                                  ).ravel())]
        if self.sum_range is not None:
            total = int(y.sum())
            if self.sum_bits:
                parts.append(encode_range_checked(f, np.array([total - self.sum_range[0]]),
                                                  self.sum_max))
        if self.l2_bound_sq is not None:
            norm_sq = int(np.dot(y, y))
            if self.l2_bits:
                parts.append(encode_range_checked(f, np.array([self.l2_bound_sq - norm_sq]),
                                                  self.l2_bound_sq))
        return np.concatenate(parts)

    # -- the circuit, on shares -----------------------------------------------------------
    def values(self, meas: np.ndarray, num_shares: int) -> np.ndarray:
        """The (share of the) vector ``y`` from the (share of the) encoding: linear."""
        f = self.field
        if self.coord_weights is None:
            return meas[:self.dimension]
        offset = f.mul(f.from_ints([self.low]), self.shares_inv(num_shares))
        return f.add(self._weighted(meas), offset)

    def _weighted(self, meas: np.ndarray) -> np.ndarray:
        """``sum_l w_l e_{j,l}`` per coordinate: ``y_j - low`` from its encoding."""
        coded = np.asarray(meas[:self.dimension * self.coord_width])
        return self.field.matvec(coded.reshape(self.dimension, self.coord_width),
                                 self.coord_weights)

    def gadget_inputs(self, meas: np.ndarray, joint_rand: np.ndarray, num_shares: int
                      ) -> list[np.ndarray]:
        f, inv = self.field, self.shares_inv(num_shares)
        y = self.values(meas, num_shares)
        inputs, at = [], 0
        for g, calls, role in zip(self.GADGETS, self.GADGET_CALLS, self.roles, strict=True):
            c = g.count  # type: ignore[attr-defined]
            if role == "range":
                r = np.asarray(joint_rand[at:at + calls])
                at += calls
                entries = meas[:self.dimension * self.coord_width]
                weights = f.power_table(r, c, inv)
                weights.reshape(-1)[len(entries):] = f.zeros(calls * c - len(entries))
                padded = f.zeros(calls * c)
                padded[:len(entries)] = entries
                x = f.zeros((calls, 2 * c))
                x[:, 0::2], x[:, 1::2] = weights, padded.reshape(calls, c)
            elif role == "bits":
                bits = meas[self.bit_offset:self.bit_offset + self.bit_count]
                x = bit_test_inputs(f, bits, joint_rand[at:at + calls], c, calls, inv)
                at += calls
            else:
                padded = f.zeros(calls * c)
                padded[:self.dimension] = y
                x = np.repeat(padded.reshape(calls, c), 2, axis=1)
            inputs.append(x)
        return inputs

    def outputs(self, meas: np.ndarray, joint_rand: np.ndarray, num_shares: int,
                gadget_outputs: list[np.ndarray]) -> np.ndarray:
        f, inv = self.field, self.shares_inv(num_shares)
        out = [f.sum(o) for o, role in zip(gadget_outputs, self.roles, strict=True)
               if role != "squares"]
        y = self.values(meas, num_shares)
        at = self.MEAS_LEN - self.sum_bits - self.l2_bits
        if self.sum_range is not None:
            total = f.sub(f.sum(y), f.mul(f.from_ints([self.sum_range[0]]), inv))
            if self.sum_bits:
                total = f.sub(total, decode_range_checked(f, meas[at:at + self.sum_bits],
                                                          self.sum_max))
            out.append(total)
            at += self.sum_bits
        if self.l2_bound_sq is not None:
            squares = f.sum(gadget_outputs[self.roles.index("squares")])
            check = f.sub(squares, f.mul(f.from_ints([self.l2_bound_sq]), inv))
            if self.l2_bits:
                check = f.add(check, decode_range_checked(f, meas[at:at + self.l2_bits],
                                                          self.l2_bound_sq))
            out.append(check)
        return np.concatenate(out)

    def truncate(self, meas: np.ndarray) -> np.ndarray:
        """``y`` (polynomial range) or ``y - low`` (digits, bits: ``decode`` adds ``low``
        once per report, which keeps the output shares linear)."""
        return meas[:self.dimension] if self.coord_weights is None else self._weighted(meas)

    def decode(self, output: np.ndarray, num_measurements: int) -> object:
        """The integer sum of ``num_measurements`` accepted vectors (centred lift)."""
        total = self.field.centred(output)
        if self.coord_weights is not None:
            total = total + self.low * num_measurements
        return total

    def circuit_soundness_terms(self) -> int:
        """Numerator of the circuit's own soundness error over ``|F|``: the joint-randomness
        combinations (degree ``c`` in each ``r_i``) and the output reduction."""
        terms = sum(g.count for g, role in zip(self.GADGETS, self.roles, strict=True)
                    if role != "squares")  # type: ignore[attr-defined]
        return terms + (1 if self.EVAL_OUTPUT_LEN > 1 else 0)

    @property
    def max_abs_coordinate(self) -> int:
        return max(abs(self.low), abs(self.high))

