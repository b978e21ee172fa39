"""What dpals' roles exchange (kinds 44-45 on the wire; :mod:`dprec.protocol.messages`).

Over the services (:mod:`dprec.systems.dpals.deploy`) every round is one secure sum
(:mod:`dprec.protocol.secure_sum`): a client uploads one
:class:`~dprec.systems.dp_pop.messages.SumUpload` per round (its quantised, noised
contribution, split and sealed), the proxy forwards one
:class:`~dprec.systems.dp_pop.messages.SumRelease` (the secure sum's wire records, shared
with dp-pop). The server broadcasts a :class:`DpalsModel` (its X25519 public key, the item
factors and, after the count round, the DP item counts) and keeps a :class:`DpalsState`
(the model and its private key; never published).

In the simulation the clients hand the proxy :class:`ClientBlock` (a block of clients'
noisy contributions: their sum, and each client's own vector on demand, with the keys a
client seals to) and the in-process proxy hands the server the :class:`ExactSum` the
secure sum yields.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dprec.protocol.messages import (
    HEADER,
    I64_RANGE,
    MAX_ITEMS,
    Message,
    MessageError,
    check_length,
    int_array,
    integer_field,
    real_array,
    unpack_fixed,
)
from dprec.protocol.secure_sum.params import SecureSumParams

__all__ = ["KEY_BYTES", "ClientBlock", "DpalsModel", "DpalsState", "ExactSum"]

KEY_BYTES = 32
"""A raw X25519 key."""
_MODEL = struct.Struct("<QIII")  # contributors, counts, items, factors
_MAX_FACTORS = 1 << 10


def _key(name: str, value: object) -> bytes:
    if not isinstance(value, bytes | bytearray | memoryview) or len(value) != KEY_BYTES:
        raise MessageError(f"{name} must be {KEY_BYTES} bytes")
    return bytes(value)


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
        V = real_array("factors_matrix", self.factors_matrix, 2, "<f8")
        integer_field("items", V.shape[0], 0, MAX_ITEMS)
        integer_field("factors", V.shape[1], 0, _MAX_FACTORS)
        counts = int_array("counts", self.counts, "<i8", *I64_RANGE)
        integer_field("counts", counts.size, 0, MAX_ITEMS)
        object.__setattr__(self, "server_key", _key("server_key", self.server_key))
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
class DpalsState(Message):
    """What the server's store keeps: the published model and the server's private key (so
    a restarted server opens shares sealed to its published key). Never published.

    Wire: 32-byte private key, then the model's message.
    """

    KIND: ClassVar[int] = 45

    private_key: bytes
    model: DpalsModel

    def __post_init__(self) -> None:
        object.__setattr__(self, "private_key", _key("private_key", self.private_key))
        if not isinstance(self.model, DpalsModel):
            raise MessageError("model must be a DpalsModel")

    @property
    def nbytes(self) -> int:
        return HEADER.size + KEY_BYTES + self.model.nbytes

    def _parts(self) -> list[bytes | memoryview]:
        return [self.private_key, self.model.to_bytes()]

    @classmethod
    def _parse(cls, payload: memoryview) -> DpalsState:
        if len(payload) < KEY_BYTES:
            raise MessageError(f"DpalsState payload must be >= {KEY_BYTES} bytes")
        return cls(bytes(payload[:KEY_BYTES]), DpalsModel.from_bytes(payload[KEY_BYTES:]))


@dataclass(frozen=True, eq=False)
class ClientBlock:
    """A block of simulated clients' contributions to one round: ``total`` is the integer
    sum of their noisy quantised vectors, ``vectors()`` each client's own (an iterable of
    rows in ``ids`` order, built on demand; they add up to ``total`` bit for bit), with the
    public keys a client seals to."""

    ids: np.ndarray
    total: np.ndarray | None
    """None: device clients (over the services), whose vectors exist only as each is
    drawn and sealed; the in-process proxy needs a total."""
    vectors: Callable[[], Iterable[np.ndarray]]
    round: int
    server_key: bytes
    proxy_key: bytes | None
    params: SecureSumParams
    """The round's secure-sum parameters (public)."""

    @property
    def n_clients(self) -> int:
        return int(self.ids.size)


@dataclass(frozen=True, eq=False)
class ExactSum:
    """The in-process proxy's forward: the exact integer sum of a round's noisy
    contributions (what the secure sum yields, bit for bit) and how many clients it sums."""

    total: np.ndarray
    contributors: int
