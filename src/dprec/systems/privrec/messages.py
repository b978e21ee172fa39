"""Messages of the PrivRec protocol (seed 002): the global model down, clients' updates up.

Built on the one framing of :mod:`dprec.protocol.messages` (header, validated decoders):

====  =================  ==========================  =====================================
kind  class              fixed fields                arrays
====  =================  ==========================  =====================================
8     ModelBroadcast     round i64, clip f64,        n f32 parameters, m u32 client ids
                         n u32, m u32
9     ModelUpdates       m u32, n u32                m x n f32 updates, m u8 clip bits
====  =================  ==========================  =====================================
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import ClassVar

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

__all__ = ["ModelBroadcast", "ModelUpdates"]

_MAX_PARAMS = 1 << 28
"""Model size limit of a parameter message (1 GiB of float32)."""


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

    @property
    def nbytes(self) -> int:
        return HEADER.size + self._FIXED.size + 4 * (self.params.size + self.clients.size)

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
