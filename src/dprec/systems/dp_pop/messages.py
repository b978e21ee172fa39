"""What dp-pop's roles exchange (kinds 42-43 on the wire; :mod:`dprec.protocol.messages`).

Over the services (:mod:`dprec.systems.dp_pop.deploy`) one round of the secure sum
(:mod:`dprec.protocol.secure_sum`; its upload and release records are
:mod:`dprec.protocol.secure_sum.wire`'s):

- the server publishes a :class:`PopularityModel` (its X25519 public key; after the round,
  the noisy counts and how many clients they sum), and keeps a :class:`PopularityState`
  (the model and its private key; never published).

In the simulation, the clients hand the proxy the layer's
:class:`~dprec.protocol.secure_sum.wire.ClientBlock` (a block of clients' noisy k-hot
vectors, with the keys they seal to over a network) and the in-process proxy hands the
server the :class:`~dprec.protocol.secure_sum.wire.ExactSum` the secure sum yields.
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
    int_array,
    integer_field,
    unpack_fixed,
)
from dprec.protocol.secure_sum.wire import KEY_BYTES, KeyedState, key_field

__all__ = ["PopularityModel", "PopularityState"]

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
        key = key_field("server_key", self.server_key)
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
class PopularityState(KeyedState[PopularityModel]):
    """What the server's store keeps: the published model and the server's private key
    (:class:`~dprec.protocol.secure_sum.wire.KeyedState`)."""

    KIND: ClassVar[int] = 43
    MODEL: ClassVar[type[Message]] = PopularityModel
