"""What dp-fedavg's roles exchange (kinds 46-47 on the wire; :mod:`dprec.protocol.messages`).

Over the services (:mod:`dprec.systems.dp_fedavg.deploy`) every round is one secure sum
(:mod:`dprec.protocol.secure_sum`): a client uploads one
:class:`~dprec.systems.dp_pop.messages.SumUpload` per round (its quantised clipped item
gradient, or zeros if its coin did not sample it, plus its Skellam share, split and sealed)
and the proxy forwards one :class:`~dprec.systems.dp_pop.messages.SumRelease` (the secure
sum's wire records, shared with dp-pop). The server broadcasts a :class:`FedAvgModel` (its
X25519 public key and the item factors) and keeps a :class:`FedAvgState` (the model and its
private key; never published).

In the simulation the clients hand the proxy :class:`ClientBlock` (a block of clients'
noisy vectors: their sum, and each client's own vector on demand, with the keys a client
seals to) and the in-process proxy hands the server the :class:`NoisySum` the secure sum
yields.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
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
    integer_field,
    real_array,
    unpack_fixed,
)
from dprec.protocol.secure_sum.params import SecureSumParams

__all__ = ["KEY_BYTES", "ClientBlock", "FedAvgModel", "FedAvgState", "NoisySum"]

KEY_BYTES = 32
"""A raw X25519 key."""
_MODEL = struct.Struct("<QIII")  # contributors, key bytes, items, factors
_MAX_FACTORS = 1 << 10


@dataclass(frozen=True)
class NoisySum:
    """The sum of ``n_clients`` clients' uploads ``v_u = [sampled] R(gamma g_u) + z_u``
    (int64, ``N F``; ``z_u`` only with secure aggregation, and with a trusted curator an
    unsampled client's part is zero): what the secure sum releases for them, which the
    in-process simulation computes directly (issue 23 §1). Whether a client was sampled is
    not in it."""

    total: np.ndarray
    n_clients: int


@dataclass(frozen=True, eq=False)
class ClientBlock:
    """A block of simulated clients' uploads to one round: ``total`` is the integer sum of
    their noisy quantised vectors, ``vectors()`` each client's own (rows in ``ids`` order;
    they add up to ``total`` bit for bit), with the public keys a client seals to and the
    round's secure-sum parameters (None: a trusted curator, nothing is sealed)."""

    ids: np.ndarray
    total: np.ndarray
    vectors: Callable[[], np.ndarray]
    round: int
    server_key: bytes
    proxy_key: bytes | None
    params: SecureSumParams | None

    @property
    def n_clients(self) -> int:
        return int(self.ids.size)


def _key(name: str, value: object, empty: bool = False) -> bytes:
    if not isinstance(value, bytes | bytearray | memoryview) or \
            len(value) not in ((0, KEY_BYTES) if empty else (KEY_BYTES,)):
        raise MessageError(f"{name} must be {KEY_BYTES} bytes" + (" or empty" if empty else ""))
    return bytes(value)


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
        V = real_array("factors_matrix", self.factors_matrix, 2, "<f8")
        integer_field("items", V.shape[0], 0, MAX_ITEMS)
        integer_field("factors", V.shape[1], 0, _MAX_FACTORS)
        object.__setattr__(self, "server_key", _key("server_key", self.server_key, True))
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
class FedAvgState(Message):
    """What the server's store keeps: the published model and the server's private key (so
    a restarted server opens shares sealed to its published key). Never published.

    Wire: 32-byte private key, then the model's message.
    """

    KIND: ClassVar[int] = 47

    private_key: bytes
    model: FedAvgModel

    def __post_init__(self) -> None:
        object.__setattr__(self, "private_key", _key("private_key", self.private_key))
        if not isinstance(self.model, FedAvgModel):
            raise MessageError("model must be a FedAvgModel")

    @property
    def nbytes(self) -> int:
        return HEADER.size + KEY_BYTES + self.model.nbytes

    def _parts(self) -> list[bytes | memoryview]:
        return [self.private_key, self.model.to_bytes()]

    @classmethod
    def _parse(cls, payload: memoryview) -> FedAvgState:
        if len(payload) < KEY_BYTES:
            raise MessageError(f"FedAvgState payload must be >= {KEY_BYTES} bytes")
        return cls(bytes(payload[:KEY_BYTES]), FedAvgModel.from_bytes(payload[KEY_BYTES:]))
