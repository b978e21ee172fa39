"""The fully linear proof of Boneh, Boyle, Corrigan-Gibbs, Gilboa, Ishai (CRYPTO 2019,
Theorem 4.3) as draft-irtf-cfrg-vdaf §7.3 specifies it, on whole vectors.

A :class:`Circuit` names its gadgets ``G_g`` (each called ``L_g`` times) and gives, for a
measurement (or a share of one), the input wires of every call
(:meth:`Circuit.gadget_inputs`, shape ``(L_g, ARITY_g)``) and the circuit's outputs from the
gadgets' outputs (:meth:`Circuit.outputs`; affine in the measurement and the gadget outputs,
so it runs on shares). No gadget's input depends on another gadget's output.

For each gadget, with ``p = next_power_of_2(1 + L)`` and ``w`` a primitive ``p``-th root:

- prove: wire polynomial ``j`` takes the values ``(seed_j, input_j of call 1, ..., of call
  L, 0, ...)`` at ``w^0, ..., w^(p-1)``; the gadget polynomial ``G(wires)`` has degree
  ``D (p - 1)``; the proof holds the seeds and its values at the first ``D (p - 1) + 1`` of
  the ``n``-th roots, ``n = next_power_of_2(D (p - 1) + 1)``.
- query (on shares): call ``k``'s output is the gadget polynomial at ``w^k``; the verifier
  share holds the (reduced) circuit output and, at a random test point ``t`` (not a root of
  unity), every wire polynomial and the gadget polynomial.
- decide (on the summed verifier): the output is 0 and ``G(wires(t)) = gadget(t)``.
"""

from __future__ import annotations

import numpy as np

from dprec.protocol.secure_sum.errors import InvalidProofError
from dprec.protocol.secure_sum.vdaf.field import Field
from dprec.protocol.secure_sum.vdaf.gadgets import Gadget
from dprec.protocol.secure_sum.vdaf.polynomial import (
    evaluate_from_prefix,
    lagrange_weights,
    next_power_of_2,
    values_at,
    values_on_larger_domain,
)

__all__ = ["Circuit", "Flp", "gadget_poly_len", "wire_poly_len"]


def wire_poly_len(calls: int) -> int:
    """``p = next_power_of_2(1 + calls)``."""
    return next_power_of_2(1 + calls)


def gadget_poly_len(degree: int, wire_len: int) -> int:
    """``D (p - 1) + 1``: the values of a gadget polynomial in the proof."""
    return degree * (wire_len - 1) + 1


class Circuit:
    """A validity circuit with its affine encoding (draft §7.3.2, ``Valid``)."""

    field: type[Field]
    MEAS_LEN: int
    JOINT_RAND_LEN: int
    OUTPUT_LEN: int
    EVAL_OUTPUT_LEN: int
    GADGETS: list[Gadget]
    GADGET_CALLS: list[int]

    def encode(self, measurement: object) -> np.ndarray:
        raise NotImplementedError

    def gadget_inputs(self, meas: np.ndarray, joint_rand: np.ndarray,
                      num_shares: int) -> list[np.ndarray]:
        """Per gadget, the inputs of its calls: ``(calls, ARITY)``."""
        raise NotImplementedError

    def outputs(self, meas: np.ndarray, joint_rand: np.ndarray, num_shares: int,
                gadget_outputs: list[np.ndarray]) -> np.ndarray:
        """The ``EVAL_OUTPUT_LEN`` outputs (all zero iff valid)."""
        raise NotImplementedError

    def truncate(self, meas: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def decode(self, output: np.ndarray, num_measurements: int) -> object:
        raise NotImplementedError

    def shares_inv(self, num_shares: int) -> np.ndarray:
        """``1 / num_shares`` in the field (a constant ``c`` enters each share as ``c / s``)."""
        m = self.field.MODULUS
        return self.field.from_ints([pow(num_shares, m - 2, m)])


class Flp:
    """prove / query / decide for one :class:`Circuit` (module docstring)."""

    def __init__(self, circuit: Circuit) -> None:
        self.circuit = circuit
        self.field = circuit.field
        self.MEAS_LEN = circuit.MEAS_LEN
        self.JOINT_RAND_LEN = circuit.JOINT_RAND_LEN
        self.OUTPUT_LEN = circuit.OUTPUT_LEN
        self.wire_lens = [wire_poly_len(calls) for calls in circuit.GADGET_CALLS]
        self.poly_lens = [gadget_poly_len(g.DEGREE, p)
                          for g, p in zip(circuit.GADGETS, self.wire_lens, strict=True)]
        self.PROVE_RAND_LEN = sum(g.ARITY for g in circuit.GADGETS)
        self.QUERY_RAND_LEN = len(circuit.GADGETS) + (
            circuit.EVAL_OUTPUT_LEN if circuit.EVAL_OUTPUT_LEN > 1 else 0)
        self.PROOF_LEN = sum(g.ARITY + m for g, m in zip(circuit.GADGETS, self.poly_lens,
                                                          strict=True))
        self.VERIFIER_LEN = 1 + sum(g.ARITY + 1 for g in circuit.GADGETS)

    def _wires(self, seeds: np.ndarray, inputs: np.ndarray, p: int) -> np.ndarray:
        arity = len(seeds)
        w = self.field.zeros((arity, p))
        w[:, 0] = seeds
        w[:, 1:inputs.shape[0] + 1] = inputs.T
        return w

    def prove(self, meas: np.ndarray, prove_rand: np.ndarray,
              joint_rand: np.ndarray) -> np.ndarray:
        """The proof that ``meas`` is valid."""
        parts, at = [], 0
        inputs = self.circuit.gadget_inputs(meas, joint_rand, 1)
        for g, x, p, m in zip(self.circuit.GADGETS, inputs, self.wire_lens, self.poly_lens,
                              strict=True):
            seeds = prove_rand[at:at + g.ARITY]
            at += g.ARITY
            wires = self._wires(seeds, x, p)
            values = values_on_larger_domain(self.field, wires, next_power_of_2(m))
            parts += [seeds, g.eval(self.field, np.ascontiguousarray(values[:, :m]))]
        return np.concatenate(parts)

    def query(self, meas: np.ndarray, proof: np.ndarray, query_rand: np.ndarray,
              joint_rand: np.ndarray, num_shares: int) -> np.ndarray:
        """A share of the verifier from shares of ``meas`` and of the proof."""
        f, c = self.field, self.circuit
        inputs = c.gadget_inputs(meas, joint_rand, num_shares)
        outs, tests, at = [], [], 0
        for g, x, p, m, calls in zip(c.GADGETS, inputs, self.wire_lens, self.poly_lens,
                                     c.GADGET_CALLS, strict=True):
            seeds, values = proof[at:at + g.ARITY], proof[at + g.ARITY:at + g.ARITY + m]
            at += g.ARITY + m
            n = next_power_of_2(m)
            outs.append(values_at(f, values, n, (n // p) * np.arange(1, calls + 1)))
            tests.append((self._wires(seeds, x, p), values, n))
        out = c.outputs(meas, joint_rand, num_shares, outs)
        if c.EVAL_OUTPUT_LEN > 1:
            rand, points = query_rand[:c.EVAL_OUTPUT_LEN], query_rand[c.EVAL_OUTPUT_LEN:]
            v = f.matvec(out.reshape(1, -1), rand)
        else:
            v, points = out, query_rand
        verifier = [v]
        for (wires, values, n), t, p in zip(tests, points, self.wire_lens, strict=True):
            t = int(t)
            if pow(t, p, f.MODULUS) == 1:
                raise InvalidProofError("the query point is a root of unity: refuse this "
                                        "report (probability ~ p / |F|)")
            verifier.append(f.matvec(wires, lagrange_weights(f, t, p)))
            verifier.append(f.from_ints([evaluate_from_prefix(f, values, n, t)]))
        return np.concatenate(verifier)

    def decide(self, verifier: np.ndarray) -> bool:
        """True iff the circuit output is zero and every gadget test passes."""
        f = self.field
        if int(verifier[0]) != 0:
            return False
        at = 1
        for g in self.circuit.GADGETS:
            wires = verifier[at:at + g.ARITY]
            check = verifier[at + g.ARITY]
            at += g.ARITY + 1
            if int(g.eval(f, np.asarray(wires).reshape(-1, 1))[0]) != int(check):
                return False
        return True
