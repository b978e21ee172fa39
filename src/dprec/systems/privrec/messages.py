"""Messages of the PrivRec protocol (seed 002): the global model down, clients' updates up.

Built on the one framing of :mod:`dprec.protocol.messages` (header, validated decoders):

====  =================  ==========================  =====================================
kind  class              fixed fields                arrays
====  =================  ==========================  =====================================
8     ModelBroadcast     round i64, clip f64,        n f32 parameters, m u32 client ids
                         n u32, m u32
9     ModelUpdates       m u32, n u32                m x n f32 updates, m u8 clip bits
30    UpdateUpload       client_id i64, unclipped    n f32 (the update)
                         u8, n u32
31    UpdateBatch        m u32, n u32                m i64 clients (increasing), m x n f32
                                                     updates, m u8 clip bits
32    InitialModel       n u32, e u32                n f32 theta_0, e i64 enrolled clients
                                                     (increasing)
33    ServerState        b u32 (broadcast bytes)     a ModelBroadcast, then the server's
                                                     generator as JSON (utf-8)
====  =================  ==========================  =====================================

Kinds 8 and 9 are the simulation's: the clients of a round send their updates as one
anonymous :class:`ModelUpdates`. Kinds 30-33 are the services' (:mod:`dprec.systems.privrec.
deploy`): the server is a trusted aggregator (it selected the round's clients and sees each
one's update in the clear), so the sender travels with its :class:`UpdateUpload`; the proxy
only relays and puts a :class:`UpdateBatch` in client order. Updates travel as float32, the
precision the clients compute them in (lossless).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dprec.protocol.messages import (
    HEADER,
    I64_RANGE,
    U32_MAX,
    Message,
    MessageError,
    check_length,
    int_array,
    integer_field,
    real_array,
    unpack_fixed,
)

__all__ = ["InitialModel", "ModelBroadcast", "ModelUpdates", "ServerState", "UpdateBatch",
           "UpdateUpload"]

_MAX_PARAMS = 1 << 28
"""Model size limit of a parameter message (1 GiB of float32)."""
_UPLOAD = struct.Struct("<qBI")
_PAIR = struct.Struct("<II")
_LENGTH = struct.Struct("<I")


@dataclass(frozen=True, eq=False)
class ModelBroadcast(Message):
    """PrivRec broadcast: the global parameters theta_0 (flat float32), the clients the
    server selected for ``round`` and the clip bound S (0: updates are not clipped).

    Wire: round i64, clip f64 (finite, >= 0), n_params u32 (<= 2^28), m u32, n_params f32
    (finite), m u32 client ids. A client calls :meth:`check_for` with its own model's size.
    """

    KIND: ClassVar[int] = 8
    _FIXED: ClassVar[struct.Struct] = struct.Struct("<qdII")

    params: np.ndarray
    clients: np.ndarray
    round: int = 0
    clip: float = 0.0

    def __post_init__(self) -> None:
        params = real_array("params", self.params, 1)
        integer_field("n_params", params.shape[0], 0, _MAX_PARAMS)
        clients = int_array("clients", self.clients, "<u4", 0, U32_MAX)
        if len(np.unique(clients)) != len(clients):
            raise MessageError("clients must be distinct (a batch drawn without replacement)")
        object.__setattr__(self, "params", params)
        object.__setattr__(self, "clients", clients)
        object.__setattr__(self, "round", integer_field("round", self.round, *I64_RANGE))
        if isinstance(self.clip, bool) or not isinstance(self.clip, int | float | np.floating):
            raise MessageError(f"clip must be a number, got {self.clip!r}")
        if not (np.isfinite(self.clip) and self.clip >= 0):
            raise MessageError(f"clip must be finite and >= 0, got {self.clip}")
        object.__setattr__(self, "clip", float(self.clip))

    def check_for(self, n_params: int, n_clients: int) -> ModelBroadcast:
        """Raise :class:`MessageError` unless it has ``n_params`` parameters and every
        selected client is one of ``n_clients``."""
        if self.params.shape[0] != n_params:
            raise MessageError(f"broadcast must carry {n_params} parameters, "
                               f"got {self.params.shape[0]}")
        if self.clients.size and int(self.clients.max()) >= n_clients:
            raise MessageError(f"selected client {int(self.clients.max())} is not one of the "
                               f"{n_clients} clients")
        return self

    @classmethod
    def serialized_size(cls, n_params: int, m: int) -> int:
        """Bytes of a broadcast of ``n_params`` parameters and ``m`` selected clients."""
        return HEADER.size + cls._FIXED.size + 4 * (n_params + m)

    @property
    def nbytes(self) -> int:
        return self.serialized_size(self.params.size, self.clients.size)

    def _parts(self) -> list[bytes | memoryview]:
        return [self._FIXED.pack(self.round, self.clip, self.params.size, self.clients.size),
                memoryview(self.params), memoryview(self.clients)]

    @classmethod
    def _parse(cls, payload: memoryview) -> ModelBroadcast:
        (rnd, clip, n, m), off = unpack_fixed("ModelBroadcast", payload, cls._FIXED)
        if n > _MAX_PARAMS:
            raise MessageError(f"n_params must be in [0, {_MAX_PARAMS}], got {n}")
        body = payload[off:]
        check_length("ModelBroadcast", body, 4 * (n + m), f"{n} parameters and {m} clients")
        params = np.frombuffer(body[:4 * n], dtype="<f4").copy()
        clients = np.frombuffer(body[4 * n:], dtype="<u4").copy()
        return cls(params, clients, rnd, clip)


@dataclass(frozen=True, eq=False)
class ModelUpdates(Message):
    """PrivRec upload of a batch of clients: each client's update Delta = theta - theta_0
    (clipped to the bound for DP-PrivRec) and its clip indicator b = 1[|Delta| <= S].

    No identifier travels. Wire: m u32, n_params u32 (<= 2^28), m x n_params f32 (finite,
    row-major), m bytes of 0/1.
    """

    KIND: ClassVar[int] = 9
    _FIXED: ClassVar[struct.Struct] = struct.Struct("<II")

    deltas: np.ndarray
    unclipped: np.ndarray

    def __post_init__(self) -> None:
        deltas = real_array("deltas", self.deltas, 2)
        integer_field("clients (deltas rows)", deltas.shape[0], 0, U32_MAX)
        integer_field("n_params (deltas columns)", deltas.shape[1], 0, _MAX_PARAMS)
        unclipped = int_array("unclipped", self.unclipped, "u1", 0, 1)
        if unclipped.shape != (deltas.shape[0],):
            raise MessageError(f"unclipped must have one 0/1 entry per client "
                               f"({deltas.shape[0]}), got shape {unclipped.shape}")
        object.__setattr__(self, "deltas", deltas)
        object.__setattr__(self, "unclipped", unclipped)

    def check_for(self, n_params: int, max_clients: int) -> ModelUpdates:
        """Raise :class:`MessageError` unless each update has ``n_params`` entries and there
        are at most ``max_clients`` of them."""
        if self.deltas.shape[1] != n_params:
            raise MessageError(f"updates must have {n_params} parameters, "
                               f"got {self.deltas.shape[1]}")
        if self.deltas.shape[0] > max_clients:
            raise MessageError(f"at most {max_clients} updates per round, "
                               f"got {self.deltas.shape[0]}")
        return self

    @property
    def nbytes(self) -> int:
        return HEADER.size + self._FIXED.size + self.deltas.nbytes + self.unclipped.nbytes

    def _parts(self) -> list[bytes | memoryview]:
        m, n = self.deltas.shape
        return [self._FIXED.pack(m, n), memoryview(self.deltas), memoryview(self.unclipped)]

    @classmethod
    def _parse(cls, payload: memoryview) -> ModelUpdates:
        (m, n), off = unpack_fixed("ModelUpdates", payload, cls._FIXED)
        if n > _MAX_PARAMS:
            raise MessageError(f"n_params must be in [0, {_MAX_PARAMS}], got {n}")
        body = payload[off:]
        check_length("ModelUpdates", body, 4 * m * n + m, f"{m} x {n} updates")
        deltas = np.frombuffer(body[:4 * m * n], dtype="<f4").reshape(m, n).copy()
        unclipped = np.frombuffer(body[4 * m * n:], dtype="u1").copy()
        return cls(deltas, unclipped)


def _increasing(name: str, ids: np.ndarray) -> None:
    if ids.size > 1 and not np.all(np.diff(ids) > 0):
        raise MessageError(f"{name} must be strictly increasing (each client once)")


@dataclass(frozen=True, eq=False)
class UpdateUpload(Message):
    """One selected client's update Delta (clipped to S under DP-PrivRec) and its clip
    indicator b = 1[|Delta| <= S], measured before clipping."""

    KIND: ClassVar[int] = 30

    client_id: int
    delta: np.ndarray
    unclipped: bool

    def __post_init__(self) -> None:
        object.__setattr__(self, "client_id",
                           integer_field("client_id", self.client_id, *I64_RANGE))
        delta = real_array("delta", self.delta, 1)
        integer_field("n_params", delta.size, 0, _MAX_PARAMS)
        if not isinstance(self.unclipped, bool | np.bool_):
            raise MessageError(f"unclipped must be a boolean, got {self.unclipped!r}")
        object.__setattr__(self, "delta", delta)
        object.__setattr__(self, "unclipped", bool(self.unclipped))

    @staticmethod
    def serialized_size(n_params: int) -> int:
        return HEADER.size + _UPLOAD.size + 4 * n_params

    @property
    def nbytes(self) -> int:
        return self.serialized_size(self.delta.size)

    def _parts(self) -> list[bytes | memoryview]:
        return [_UPLOAD.pack(self.client_id, int(self.unclipped), self.delta.size),
                memoryview(self.delta)]

    @classmethod
    def _parse(cls, payload: memoryview) -> UpdateUpload:
        (client_id, bit, n), off = unpack_fixed(cls.__name__, payload, _UPLOAD)
        if bit > 1:
            raise MessageError(f"unclipped must be 0 or 1, got {bit}")
        if n > _MAX_PARAMS:
            raise MessageError(f"n_params must be in [0, {_MAX_PARAMS}], got {n}")
        body = payload[off:]
        check_length(cls.__name__, body, 4 * n, f"{n} parameters")
        return cls(client_id, np.frombuffer(body, "<f4", n).copy(), bool(bit))


@dataclass(frozen=True, eq=False)
class UpdateBatch(Message):
    """A round's updates: row j of ``deltas`` is client ``clients[j]``'s, ``unclipped[j]``
    its clip indicator; clients strictly increasing (the canonical order)."""

    KIND: ClassVar[int] = 31

    clients: np.ndarray
    deltas: np.ndarray
    unclipped: np.ndarray

    def __post_init__(self) -> None:
        clients = int_array("clients", self.clients, "<i8", 0, I64_RANGE[1])
        deltas = real_array("deltas", self.deltas, 2)
        integer_field("clients (rows)", deltas.shape[0], 0, U32_MAX)
        integer_field("n_params (columns)", deltas.shape[1], 0, _MAX_PARAMS)
        bits = int_array("unclipped", self.unclipped, "u1", 0, 1)
        if not clients.size == deltas.shape[0] == bits.size:
            raise MessageError(f"clients, deltas and unclipped must have one row per client, "
                               f"got {clients.size}, {deltas.shape[0]}, {bits.size}")
        _increasing("clients", clients)
        object.__setattr__(self, "clients", clients)
        object.__setattr__(self, "deltas", deltas)
        object.__setattr__(self, "unclipped", bits)

    def __len__(self) -> int:
        return int(self.clients.size)

    @property
    def n_clients(self) -> int:
        """Senders of the batch (one update each)."""
        return len(self)

    @property
    def n_params(self) -> int:
        return int(self.deltas.shape[1])

    @staticmethod
    def serialized_size(m: int, n_params: int) -> int:
        return HEADER.size + _PAIR.size + m * (8 + 4 * n_params + 1)

    @property
    def nbytes(self) -> int:
        return self.serialized_size(len(self), self.n_params)

    def _parts(self) -> list[bytes | memoryview]:
        return [_PAIR.pack(len(self), self.n_params), memoryview(self.clients),
                memoryview(self.deltas).cast("B"), memoryview(self.unclipped)]

    @classmethod
    def _parse(cls, payload: memoryview) -> UpdateBatch:
        (m, n), off = unpack_fixed(cls.__name__, payload, _PAIR)
        if n > _MAX_PARAMS:
            raise MessageError(f"n_params must be in [0, {_MAX_PARAMS}], got {n}")
        body = payload[off:]
        check_length(cls.__name__, body, m * (8 + 4 * n + 1), f"{m} updates of {n} parameters")
        clients = np.frombuffer(body, "<i8", m).copy()
        deltas = np.frombuffer(body, "<f4", m * n, 8 * m).reshape(m, n).copy()
        bits = np.frombuffer(body, "u1", m, 8 * m + 4 * m * n).copy()
        return cls(clients, deltas, bits)

    @classmethod
    def of_rows(cls, clients: np.ndarray, deltas: np.ndarray, unclipped: np.ndarray
                ) -> UpdateBatch:
        """The batch of rows given in any client order (sorted here)."""
        order = np.argsort(np.asarray(clients), kind="stable")
        return cls(np.asarray(clients)[order], np.asarray(deltas)[order],
                   np.asarray(unclipped)[order])

    def uploads(self) -> list[UpdateUpload]:
        """One message per client."""
        return [UpdateUpload(int(c), self.deltas[j], bool(self.unclipped[j]))
                for j, c in enumerate(self.clients)]


@dataclass(frozen=True, eq=False)
class InitialModel(Message):
    """What a PrivRec server starts from: theta_0 and the enrolled clients it samples from
    (increasing)."""

    KIND: ClassVar[int] = 32

    params: np.ndarray
    enrolled: np.ndarray

    def __post_init__(self) -> None:
        params = real_array("params", self.params, 1)
        integer_field("n_params", params.size, 0, _MAX_PARAMS)
        enrolled = int_array("enrolled", self.enrolled, "<i8", 0, I64_RANGE[1])
        integer_field("enrolled clients", enrolled.size, 0, U32_MAX)
        _increasing("enrolled", enrolled)
        object.__setattr__(self, "params", params)
        object.__setattr__(self, "enrolled", enrolled)

    @property
    def nbytes(self) -> int:
        return HEADER.size + _PAIR.size + 4 * self.params.size + 8 * self.enrolled.size

    def _parts(self) -> list[bytes | memoryview]:
        return [_PAIR.pack(self.params.size, self.enrolled.size), memoryview(self.params),
                memoryview(self.enrolled)]

    @classmethod
    def _parse(cls, payload: memoryview) -> InitialModel:
        (n, e), off = unpack_fixed(cls.__name__, payload, _PAIR)
        if n > _MAX_PARAMS:
            raise MessageError(f"n_params must be in [0, {_MAX_PARAMS}], got {n}")
        body = payload[off:]
        check_length(cls.__name__, body, 4 * n + 8 * e, f"{n} parameters and {e} clients")
        return cls(np.frombuffer(body, "<f4", n).copy(), np.frombuffer(body, "<i8", e, 4 * n)
                   .copy())


@dataclass(frozen=True, eq=False)
class ServerState(Message):
    """What the server keeps after a round (never published): the broadcast and the state
    of its own generator (which the next rounds' selection and noise draw from).
    ``generator`` is a JSON object (:func:`~dprec.protocol.deployment.generator_to_json`)."""

    KIND: ClassVar[int] = 33

    broadcast: ModelBroadcast
    generator: dict[str, Any]

    def __post_init__(self) -> None:
        if not isinstance(self.broadcast, ModelBroadcast):
            raise MessageError(f"broadcast must be a ModelBroadcast, got "
                               f"{type(self.broadcast).__name__}")
        if not isinstance(self.generator, dict):
            raise MessageError("generator must be a JSON object")

    def _json(self) -> bytes:
        return json.dumps(self.generator, sort_keys=True).encode()

    @property
    def nbytes(self) -> int:
        return HEADER.size + _LENGTH.size + self.broadcast.nbytes + len(self._json())

    def _parts(self) -> list[bytes | memoryview]:
        return [_LENGTH.pack(self.broadcast.nbytes), self.broadcast.to_bytes(), self._json()]

    @classmethod
    def _parse(cls, payload: memoryview) -> ServerState:
        (b,), off = unpack_fixed(cls.__name__, payload, _LENGTH)
        if len(payload) < off + b:
            raise MessageError(f"{cls.__name__} payload is shorter than its {b}-byte broadcast")
        broadcast = ModelBroadcast.from_bytes(payload[off:off + b])
        try:
            generator = json.loads(bytes(payload[off + b:]).decode())
        except (UnicodeDecodeError, ValueError) as e:
            raise MessageError(f"{cls.__name__}: the generator is not JSON: {e}") from None
        return cls(broadcast, generator)
