"""The gadgets of the FLP (draft-irtf-cfrg-vdaf §7.3.2), evaluated on many points at once.

A gadget ``G`` of arity ``a`` and degree ``D`` is evaluated on an ``(a, N)`` array (input
wire ``j`` at ``N`` points) and returns its ``N`` outputs. The prover evaluates it on the
values of the wire polynomials at the roots of unity, which gives the gadget polynomial's
values there; the verifier evaluates it once, on the wire polynomials' values at the test
point.

- :class:`Mul`: ``x0 * x1`` (degree 2).
- :class:`PolyEval`: ``q(x0)`` for a fixed integer polynomial ``q`` (degree ``deg q``).
- :class:`ParallelSum`: ``sum_i G'(x_{i a'}, ..., x_{i a' + a' - 1})`` over ``count`` copies
  of a subcircuit ``G'`` (BBCGGI19 §4.4).
- :class:`WeightedRange` (dprec's, not in the spec): ``x0 * prod_{k=lo}^{hi} (x1 - k)``,
  degree ``hi - lo + 2``: zero exactly when ``x0 = 0`` or ``x1`` is an integer of
  ``[lo, hi]``. Under a :class:`ParallelSum` with ``x0`` a random weight it checks a whole
  vector's range without the bit decomposition that multiplies the upload by the bit width.
"""

from __future__ import annotations

import numpy as np

from dprec.protocol.secure_sum.vdaf.field import Field

__all__ = ["Gadget", "Mul", "ParallelSum", "PolyEval", "WeightedRange"]


class Gadget:
    """A validity-circuit gadget: :attr:`ARITY`, :attr:`DEGREE`, :meth:`eval`."""

    ARITY: int
    DEGREE: int

    def eval(self, field: type[Field], x: np.ndarray) -> np.ndarray:
        """The outputs on ``x`` of shape ``(ARITY, N)``: shape ``(N,)``."""
        raise NotImplementedError


class Mul(Gadget):
    """``x0 * x1``."""

    ARITY = 2
    DEGREE = 2

    def eval(self, field: type[Field], x: np.ndarray) -> np.ndarray:
        return field.mul(x[0], x[1])


class PolyEval(Gadget):
    """``q(x0)``, ``q`` given by its integer coefficients, lowest first."""

    ARITY = 1

    def __init__(self, coefficients: list[int]) -> None:
        coefficients = list(coefficients)
        while coefficients and coefficients[-1] == 0:
            coefficients.pop()
        if not coefficients:
            raise ValueError("invalid polynomial: zero length")
        self.coefficients = coefficients
        self.DEGREE = len(coefficients) - 1

    def eval(self, field: type[Field], x: np.ndarray) -> np.ndarray:
        c = field.from_ints(self.coefficients)
        out = np.broadcast_to(c[-1:], x[0].shape).copy()
        for coefficient in c[-2::-1]:
            out = field.add(field.mul(out, x[0]), coefficient)
        return out


class WeightedRange(Gadget):
    """``x0 * prod_{k=lo}^{hi} (x1 - k)`` (module docstring)."""

    ARITY = 2

    def __init__(self, low: int, high: int) -> None:
        if high < low:
            raise ValueError("empty range")
        self.low, self.high = int(low), int(high)
        self.DEGREE = self.high - self.low + 2

    def eval(self, field: type[Field], x: np.ndarray) -> np.ndarray:
        return field.weighted_range(x[0], x[1], self.low, self.high)


class ParallelSum(Gadget):
    """The sum of ``count`` copies of ``subcircuit`` on consecutive slices of the inputs."""

    def __init__(self, subcircuit: Gadget, count: int) -> None:
        if count < 1:
            raise ValueError("count must be >= 1")
        self.subcircuit = subcircuit
        self.count = count
        self.ARITY = subcircuit.ARITY * count
        self.DEGREE = subcircuit.DEGREE

    def eval(self, field: type[Field], x: np.ndarray) -> np.ndarray:
        a = self.subcircuit.ARITY
        n_points = x.shape[1]
        # (count, a, N) -> (a, count * N): every copy on every point in one call
        parts = np.asarray(x).reshape(self.count, a, n_points).transpose(1, 0, 2)
        outs = self.subcircuit.eval(field, parts.reshape(a, self.count * n_points))
        return field.sum_rows(np.ascontiguousarray(outs.reshape(self.count, n_points).T))
