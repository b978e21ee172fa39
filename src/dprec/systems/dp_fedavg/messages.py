"""What dp-fedavg's roles exchange (kinds 46-47 on the wire; :mod:`dprec.protocol.messages`).

Over the services (:mod:`dprec.systems.dp_fedavg.deploy`) every round is one secure sum
(:mod:`dprec.protocol.secure_sum`): a client uploads one
:class:`~dprec.protocol.secure_sum.wire.SumUpload` per round (its quantised clipped item
gradient, or zeros if its coin did not sample it, plus its Skellam share, split and sealed)
and the proxy forwards one :class:`~dprec.protocol.secure_sum.wire.SumRelease` (the secure
sum's wire records, shared by every secure-sum system). The server broadcasts a
:class:`FedAvgModel` (its X25519 public key and the item factors) and keeps a
:class:`FedAvgState` (the model and its private key; never published).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dprec.protocol.messages import (
    HEADER,
    I64_RANGE,
    Message,
    check_length,
    factor_matrix,
    integer_field,
    unpack_fixed,
)
from dprec.protocol.secure_sum.wire import KeyedState, key_field

__all__ = ["FedAvgModel", "FedAvgState"]

_MODEL = struct.Struct("<QIII")  # contributors, key bytes, items, factors


@dataclass(frozen=True, eq=False)
class FedAvgModel(Message):
    """The server's broadcast: its public key (empty for a trusted curator, which opens no
    secure sum), the item factors ``V`` (items x F, float64, finite) and how many clients
    the last round summed.

    Wire: contributors u64, key bytes u32 (0 or 32), items u32, factors u32, the key,
    V f64 (row-major).
    """

    KIND: ClassVar[int] = 46

    server_key: bytes
    factors_matrix: np.ndarray
    contributors: int = 0

    def __post_init__(self) -> None:
        V = factor_matrix("factors_matrix", self.factors_matrix)
        object.__setattr__(self, "server_key", key_field("server_key", self.server_key, True))
        object.__setattr__(self, "factors_matrix", V)
        object.__setattr__(self, "contributors",
                           integer_field("contributors", self.contributors, 0, I64_RANGE[1]))

    @property
    def nbytes(self) -> int:
        return HEADER.size + _MODEL.size + len(self.server_key) + 8 * self.factors_matrix.size

    def _parts(self) -> list[bytes | memoryview]:
        V = self.factors_matrix
        return [_MODEL.pack(self.contributors, len(self.server_key), *V.shape),
                self.server_key, memoryview(V).cast("B")]

    @classmethod
    def _parse(cls, payload: memoryview) -> FedAvgModel:
        (contributors, k, n, f), off = unpack_fixed(cls.__name__, payload, _MODEL)
        body = payload[off:]
        check_length(cls.__name__, body, k + 8 * n * f, f"a {k}-byte key and {n} x {f} factors")
        V = np.frombuffer(body[k:], "<f8").reshape(n, f).copy()
        return cls(bytes(body[:k]), V, contributors)


@dataclass(frozen=True, eq=False)
class FedAvgState(KeyedState[FedAvgModel]):
    """What the server's store keeps: the published model and the server's private key
    (:class:`~dprec.protocol.secure_sum.wire.KeyedState`)."""

    KIND: ClassVar[int] = 47
    MODEL: ClassVar[type[Message]] = FedAvgModel
