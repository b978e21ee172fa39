"""The Prio3 instances of draft-irtf-cfrg-vdaf-20 §7.4 (algorithm ids of §10), as the
published test vectors name them."""

from __future__ import annotations

from dprec.protocol.secure_sum.vdaf.circuits import (
    Count,
    Histogram,
    MultihotCountVec,
    Sum,
    SumVec,
)
from dprec.protocol.secure_sum.vdaf.field import Field, Field64, Field128
from dprec.protocol.secure_sum.vdaf.prio3 import Prio3

__all__ = ["prio3_count", "prio3_histogram", "prio3_multihot_count_vec", "prio3_sum",
           "prio3_sum_vec", "prio3_sum_vec_with_multiproof"]


def prio3_count(shares: int) -> Prio3:
    """Prio3Count: Field64, one proof, id 1."""
    return Prio3(Count(Field64), 1, 0x00000001, shares)


def prio3_sum(shares: int, max_measurement: int) -> Prio3:
    """Prio3Sum: Field64, one proof, id 2."""
    return Prio3(Sum(Field64, max_measurement), 1, 0x00000002, shares)


def prio3_sum_vec(shares: int, length: int, max_measurement: int, chunk_length: int
                  ) -> Prio3:
    """Prio3SumVec: Field128, one proof, id 3."""
    return Prio3(SumVec(Field128, length, max_measurement, chunk_length), 1, 0x00000003,
                 shares)


def prio3_histogram(shares: int, length: int, chunk_length: int) -> Prio3:
    """Prio3Histogram: Field128, one proof, id 4."""
    return Prio3(Histogram(Field128, length, chunk_length), 1, 0x00000004, shares)


def prio3_multihot_count_vec(shares: int, length: int, max_weight: int, chunk_length: int
                             ) -> Prio3:
    """Prio3MultihotCountVec: Field128, one proof, id 5."""
    return Prio3(MultihotCountVec(Field128, length, max_weight, chunk_length), 1, 0x00000005,
                 shares)


def prio3_sum_vec_with_multiproof(shares: int, field: type[Field], proofs: int, length: int,
                                  max_measurement: int, chunk_length: int) -> Prio3:
    """Prio3SumVecWithMultiproof (the draft's experimental variant, id 0xFFFFFFFF)."""
    return Prio3(SumVec(field, length, max_measurement, chunk_length), proofs, 0xFFFFFFFF,
                 shares)
