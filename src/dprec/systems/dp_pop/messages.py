"""What dp-pop's roles exchange (kinds 40-43 on the wire; :mod:`dprec.protocol.messages`).

Over the services (:mod:`dprec.systems.dp_pop.deploy`) one round of the secure sum
(:mod:`dprec.protocol.secure_sum`):

- a client uploads one :class:`SumUpload` to the proxy: the secure-sum upload (mask seed
  sealed to the proxy, share sealed to the server; no sender id inside);
- the proxy forwards one :class:`SumRelease`: the shuffled server shares and the mask sum;
- the server publishes a :class:`PopularityModel` (its X25519 public key; after the round,
  the noisy counts and how many clients they sum), and keeps a :class:`PopularityState`
  (the model and its private key; never published).

In the simulation, the clients hand the proxy :class:`NoisyVectors` (a block of clients'
noisy k-hot vectors, with the keys they seal to over a network) and the in-process proxy
hands the server the :class:`ExactSum` the secure sum yields.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, ClassVar

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
    unpack_fixed,
)
from dprec.protocol.secure_sum.params import SecureSumParams

__all__ = ["KEY_BYTES", "ExactSum", "NoisyVectors", "PopularityModel", "PopularityState",
           "SumRelease", "SumUpload"]

KEY_BYTES = 32
"""A raw X25519 key."""
_RELEASE_HEAD = struct.Struct(">4sQI")  # the secure sum's release header: magic, round, count
_UPLOAD_ID = slice(12, 28)  # the message id inside a secure-sum upload ("DSU1", round u64)


def _raw(name: str, value: object) -> bytes:
    if not isinstance(value, bytes | bytearray | memoryview):
        raise MessageError(f"{name} must be bytes, got {type(value).__name__}")
    return bytes(value)


@dataclass(frozen=True, eq=False)
class SumUpload(Message):
    """One client's secure-sum upload (:class:`dprec.protocol.secure_sum.messages.Upload`
    bytes; its length is checked against the round's parameters by the deployment)."""

    KIND: ClassVar[int] = 40

    data: bytes

    def __post_init__(self) -> None:
        object.__setattr__(self, "data", _raw("data", self.data))

    @property
    def message_id(self) -> bytes:
        """The upload's 16-byte message id (what a replay repeats)."""
        return self.data[_UPLOAD_ID]

    @property
    def nbytes(self) -> int:
        return HEADER.size + len(self.data)

    def _parts(self) -> list[bytes | memoryview]:
        return [self.data]

    @classmethod
    def _parse(cls, payload: memoryview) -> SumUpload:
        return cls(bytes(payload))


@dataclass(frozen=True, eq=False)
class SumRelease(Message):
    """The proxy's one batch of a round (:class:`dprec.protocol.secure_sum.messages.Release`
    bytes: the shuffled server shares and the mask sum; checked against the round's
    parameters by the deployment)."""

    KIND: ClassVar[int] = 41

    data: bytes

    def __post_init__(self) -> None:
        data = _raw("data", self.data)
        if len(data) < _RELEASE_HEAD.size or data[:4] not in (b"DSR2", b"DSR4"):
            raise MessageError("a SumRelease holds a secure-sum release (starting b'DSR2', "
                               "or b'DSR4' with proofs)")
        object.__setattr__(self, "data", data)

    @property
    def n_clients(self) -> int:
        """The shares it holds: one per contributing client."""
        return int(_RELEASE_HEAD.unpack_from(self.data)[2])

    @property
    def nbytes(self) -> int:
        return HEADER.size + len(self.data)

    def _parts(self) -> list[bytes | memoryview]:
        return [self.data]

    @classmethod
    def _parse(cls, payload: memoryview) -> SumRelease:
        return cls(bytes(payload))


_MODEL = struct.Struct("<QI")  # contributors, d (0 before the round)


@dataclass(frozen=True, eq=False)
class PopularityModel(Message):
    """The server's broadcast: its X25519 public key (what clients seal shares to) and,
    after the round, every item's noisy count and the number of clients summed.

    Wire: contributors u64, d u32, 32-byte key, d i64 counts.
    """

    KIND: ClassVar[int] = 42

    server_key: bytes
    counts: np.ndarray
    contributors: int = 0

    def __post_init__(self) -> None:
        key = _raw("server_key", self.server_key)
        if len(key) != KEY_BYTES:
            raise MessageError(f"server_key must be {KEY_BYTES} bytes, got {len(key)}")
        counts = int_array("counts", self.counts, "<i8", *I64_RANGE)
        integer_field("d", counts.size, 0, MAX_ITEMS)
        object.__setattr__(self, "server_key", key)
        object.__setattr__(self, "counts", counts)
        object.__setattr__(self, "contributors",
                           integer_field("contributors", self.contributors, 0, I64_RANGE[1]))

    @property
    def nbytes(self) -> int:
        return HEADER.size + _MODEL.size + KEY_BYTES + 8 * self.counts.size

    def _parts(self) -> list[bytes | memoryview]:
        return [_MODEL.pack(self.contributors, self.counts.size), self.server_key,
                memoryview(self.counts)]

    @classmethod
    def _parse(cls, payload: memoryview) -> PopularityModel:
        (contributors, d), off = unpack_fixed(cls.__name__, payload, _MODEL)
        body = payload[off:]
        check_length(cls.__name__, body, KEY_BYTES + 8 * d, f"a key and {d} counts")
        return cls(bytes(body[:KEY_BYTES]), np.frombuffer(body[KEY_BYTES:], "<i8").copy(),
                   contributors)


@dataclass(frozen=True, eq=False)
class PopularityState(Message):
    """What the server's store keeps: the published model and the server's private key
    (so a restarted server opens the shares sealed to its published key). Never
    published: the artefact is :attr:`model` alone.

    Wire: 32-byte private key, then the model's message.
    """

    KIND: ClassVar[int] = 43

    private_key: bytes
    model: PopularityModel

    def __post_init__(self) -> None:
        key = _raw("private_key", self.private_key)
        if len(key) != KEY_BYTES:
            raise MessageError(f"private_key must be {KEY_BYTES} bytes, got {len(key)}")
        if not isinstance(self.model, PopularityModel):
            raise MessageError("model must be a PopularityModel")
        object.__setattr__(self, "private_key", key)

    @property
    def nbytes(self) -> int:
        return HEADER.size + KEY_BYTES + self.model.nbytes

    def _parts(self) -> list[bytes | memoryview]:
        return [self.private_key, self.model.to_bytes()]

    @classmethod
    def _parse(cls, payload: memoryview) -> PopularityState:
        if len(payload) < KEY_BYTES:
            raise MessageError(f"PopularityState payload must be >= {KEY_BYTES} bytes")
        return cls(bytes(payload[:KEY_BYTES]), PopularityModel.from_bytes(payload[KEY_BYTES:]))


@dataclass(frozen=True, eq=False)
class NoisyVectors:
    """A block of simulated clients' contributions of one round: row ``i`` is client
    ``ids[i]``'s k-hot vector plus its Skellam share (int64), with the public keys a client
    seals to over a network (:meth:`~dprec.systems.dp_pop.deploy.PopDeployment.client_messages`)."""

    ids: np.ndarray
    vectors: np.ndarray
    round: int
    server_key: bytes
    proxy_key: bytes | None
    params: SecureSumParams
    """The round's secure-sum parameters (public)."""
    check: Any = None
    """``validity=prio3``: the round's :class:`ContributionCheck` (each client proves its
    vector over the services); None: no proof."""

    @property
    def n_clients(self) -> int:
        return int(self.ids.size)


@dataclass(frozen=True, eq=False)
class ExactSum:
    """The in-process proxy's forward: the exact integer sum of a round's noisy vectors
    (what the secure sum yields, bit for bit) and how many clients it sums."""

    counts: np.ndarray
    contributors: int
