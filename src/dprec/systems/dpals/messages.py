"""What dpals' roles exchange (kinds 44-45 on the wire; :mod:`dprec.protocol.messages`).

Over the services (:mod:`dprec.systems.dpals.deploy`) every round is one secure sum
(:mod:`dprec.protocol.secure_sum`): a client uploads one
:class:`~dprec.protocol.secure_sum.wire.SumUpload` per round (its quantised, noised
contribution, split and sealed), the proxy forwards one
:class:`~dprec.protocol.secure_sum.wire.SumRelease` (the secure sum's wire records, shared
by every secure-sum system). The server broadcasts a :class:`DpalsModel` (its X25519
public key, the item factors and, after the count round, the DP item counts) and keeps a
:class:`DpalsState` (the model and its private key; never published).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dprec.protocol.messages import (
    HEADER,
    I64_RANGE,
    MAX_ITEMS,
    Message,
    check_length,
    factor_matrix,
    int_array,
    integer_field,
    unpack_fixed,
)
from dprec.protocol.secure_sum.wire import KEY_BYTES, KeyedState, key_field

__all__ = ["DpalsModel", "DpalsState"]

_MODEL = struct.Struct("<QIII")  # contributors, counts, items, factors


@dataclass(frozen=True, eq=False)
class DpalsModel(Message):
    """The server's broadcast: its public key, the item factors ``V`` (items x F, float64,
    finite) and the DP item counts (empty before the count round or without one).

    Wire: contributors u64, counts u32, items u32, factors u32, 32-byte key, counts i64,
    V f64 (row-major).
    """

    KIND: ClassVar[int] = 44

    server_key: bytes
    factors_matrix: np.ndarray
    counts: np.ndarray
    contributors: int = 0

    def __post_init__(self) -> None:
        V = factor_matrix("factors_matrix", self.factors_matrix)
        counts = int_array("counts", self.counts, "<i8", *I64_RANGE)
        integer_field("counts", counts.size, 0, MAX_ITEMS)
        object.__setattr__(self, "server_key", key_field("server_key", self.server_key))
        object.__setattr__(self, "factors_matrix", V)
        object.__setattr__(self, "counts", counts)
        object.__setattr__(self, "contributors",
                           integer_field("contributors", self.contributors, 0, I64_RANGE[1]))

    @property
    def nbytes(self) -> int:
        return (HEADER.size + _MODEL.size + KEY_BYTES + 8 * self.counts.size
                + 8 * self.factors_matrix.size)

    def _parts(self) -> list[bytes | memoryview]:
        V = self.factors_matrix
        return [_MODEL.pack(self.contributors, self.counts.size, *V.shape), self.server_key,
                memoryview(self.counts), memoryview(V).cast("B")]

    @classmethod
    def _parse(cls, payload: memoryview) -> DpalsModel:
        (contributors, c, n, f), off = unpack_fixed(cls.__name__, payload, _MODEL)
        body = payload[off:]
        check_length(cls.__name__, body, KEY_BYTES + 8 * c + 8 * n * f,
                     f"a key, {c} counts and {n} x {f} factors")
        counts = np.frombuffer(body[KEY_BYTES:KEY_BYTES + 8 * c], "<i8").copy()
        V = np.frombuffer(body[KEY_BYTES + 8 * c:], "<f8").reshape(n, f).copy()
        return cls(bytes(body[:KEY_BYTES]), V, counts, contributors)


@dataclass(frozen=True, eq=False)
class DpalsState(KeyedState[DpalsModel]):
    """What the server's store keeps: the published model and the server's private key
    (:class:`~dprec.protocol.secure_sum.wire.KeyedState`)."""

    KIND: ClassVar[int] = 45
    MODEL: ClassVar[type[Message]] = DpalsModel
