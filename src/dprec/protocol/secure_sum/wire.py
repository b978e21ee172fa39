"""What every secure-sum system's roles exchange over the services (kinds 40-41 on the wire;
:mod:`dprec.protocol.messages`), and the simulation's blocks, written once for dp-pop, dpals
and dp-fedavg:

- a client uploads one :class:`SumUpload` per round (:class:`.messages.Upload` bytes: the
  mask seed sealed to the proxy, the share sealed to the server; no sender id inside);
- the proxy forwards one :class:`SumRelease` per round (:class:`.messages.Release` bytes, or
  a proved batch, :mod:`.proved`);
- the server's store keeps a :class:`KeyedState` (its private key and the model it
  published; never published); each system subclasses it with its own model and kind.

In the simulation the clients hand the in-process proxy :class:`ClientBlock` and the proxy
hands the server the :class:`ExactSum` the secure sum yields, bit for bit.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np

from dprec.protocol.messages import HEADER, Message, MessageError
from dprec.protocol.secure_sum.params import SecureSumParams
from dprec.protocol.secure_sum.sealed import KEY_BYTES

__all__ = ["KEY_BYTES", "ClientBlock", "ExactSum", "KeyedState", "SumRelease", "SumUpload",
           "key_field"]

M = TypeVar("M", bound=Message)
_RELEASE_HEAD = struct.Struct(">4sQI")  # the secure sum's release header: magic, round, count
_UPLOAD_ID = slice(12, 28)  # the message id inside a secure-sum upload ("DSU1", round u64)


def _raw(name: str, value: object) -> bytes:
    if not isinstance(value, bytes | bytearray | memoryview):
        raise MessageError(f"{name} must be bytes, got {type(value).__name__}")
    return bytes(value)


def key_field(name: str, value: object, empty: bool = False) -> bytes:
    """``value`` as a raw :data:`KEY_BYTES`-byte X25519 key (or, with ``empty``, no key: a
    trusted curator's broadcast), else :class:`MessageError`."""
    key = _raw(name, value)
    if len(key) not in ((0, KEY_BYTES) if empty else (KEY_BYTES,)):
        raise MessageError(f"{name} must be {KEY_BYTES} bytes" + (" or empty" if empty else "")
                           + f", got {len(key)}")
    return key


@dataclass(frozen=True, eq=False)
class _Record(Message):
    """A secure-sum record carried whole: ``data`` is its payload."""

    data: bytes

    @property
    def nbytes(self) -> int:
        return HEADER.size + len(self.data)

    def _parts(self) -> list[bytes | memoryview]:
        return [self.data]

    @classmethod
    def _parse(cls, payload: memoryview) -> Any:
        return cls(bytes(payload))


@dataclass(frozen=True, eq=False)
class SumUpload(_Record):
    """One client's secure-sum upload (:class:`dprec.protocol.secure_sum.messages.Upload`
    bytes, or a proved upload; its length is checked against the round's parameters by the
    deployment)."""

    KIND: ClassVar[int] = 40

    def __post_init__(self) -> None:
        object.__setattr__(self, "data", _raw("data", self.data))

    @property
    def message_id(self) -> bytes:
        """The upload's 16-byte message id (what a replay repeats)."""
        return self.data[_UPLOAD_ID]


@dataclass(frozen=True, eq=False)
class SumRelease(_Record):
    """The proxy's one batch of a round (:class:`dprec.protocol.secure_sum.messages.MaskRelease`
    bytes: the mask sum and the agreed ids, or with proofs the proxy's aggregate share and the
    agreed ids; checked against the round's parameters by the deployment)."""

    KIND: ClassVar[int] = 41

    def __post_init__(self) -> None:
        data = _raw("data", self.data)
        if len(data) < _RELEASE_HEAD.size or data[:4] not in (b"DSR2", b"DSR3", b"DSR4"):
            raise MessageError("a SumRelease holds a secure-sum release (starting b'DSR2', "
                               "b'DSR3' (a mask sum and ids), or b'DSR4' with proofs)")
        object.__setattr__(self, "data", data)

    @property
    def n_clients(self) -> int:
        """The shares it holds: one per contributing client."""
        return int(_RELEASE_HEAD.unpack_from(self.data)[2])


@dataclass(frozen=True, eq=False)
class KeyedState(Message, Generic[M]):
    """What a secure-sum server's store keeps: its private key (so a restarted server opens
    the shares sealed to its published key) and the model ``M`` it published. Never
    published: the artefact is :attr:`model` alone. A system subclasses it with its
    ``KIND`` and ``MODEL``.

    Wire: 32-byte private key, then the model's message.
    """

    MODEL: ClassVar[type[Message]] = Message

    private_key: bytes
    model: M

    def __post_init__(self) -> None:
        object.__setattr__(self, "private_key", key_field("private_key", self.private_key))
        if not isinstance(self.model, self.MODEL):
            raise MessageError(f"model must be a {self.MODEL.__name__}")

    @property
    def nbytes(self) -> int:
        return HEADER.size + KEY_BYTES + self.model.nbytes

    def _parts(self) -> list[bytes | memoryview]:
        return [self.private_key, self.model.to_bytes()]

    @classmethod
    def _parse(cls, payload: memoryview) -> KeyedState[M]:
        if len(payload) < KEY_BYTES:
            raise MessageError(f"{cls.__name__} payload must be >= {KEY_BYTES} bytes")
        return cls(bytes(payload[:KEY_BYTES]), cls.MODEL.from_bytes(payload[KEY_BYTES:]))


@dataclass(frozen=True, eq=False)
class ClientBlock:
    """A block of simulated clients' contributions to one round: ``total`` is the integer
    sum of their noisy quantised vectors, ``vectors()`` each client's own (rows in ``ids``
    order, built on demand; they add up to ``total`` bit for bit), with the public keys a
    client seals to, the round's secure-sum parameters (None: a trusted curator, nothing is
    sealed) and, with ``validity=prio3``, the round's check (each client proves its vector
    over the services)."""

    ids: np.ndarray
    total: np.ndarray | None
    """None: device clients (over the services), whose vectors exist only as each is
    drawn and sealed; the in-process proxy needs a total."""
    vectors: Callable[[], Iterable[np.ndarray]]
    round: int
    server_key: bytes
    proxy_key: bytes | None
    params: SecureSumParams | None
    check: Any = None
    """The round's :class:`~dprec.protocol.secure_sum.vdaf.contribution.ContributionCheck`
    (None: no proof)."""

    @property
    def n_clients(self) -> int:
        return int(self.ids.size)


@dataclass(frozen=True, eq=False)
class ExactSum:
    """The in-process proxy's forward: the exact integer sum of a round's noisy
    contributions (what the secure sum yields, bit for bit) and how many clients it sums."""

    total: np.ndarray
    contributors: int
