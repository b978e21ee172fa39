"""What the rating clients and the server share: the public rating scale and the upload batch.

Seed 001 (docs/architecture.md §3): each client uploads, once, one perturbed value per
reported item.
:class:`RatingReports` is the simulation's batch of many clients' uploads; it expands to the
wire messages of :mod:`dprec.protocol.messages` (one ``ValueReports`` per client, factor 0,
values as float32) and back.

Over the services (:mod:`dprec.systems.ldp_svd.deploy`) the reports travel losslessly, as
float64: a client uploads one :class:`RatingUpload`, the proxy forwards a
:class:`RatingBatch` (the user ids travel: seed 001 has no anonymising proxy, the server
trains a factor per user) and the server publishes its model as a :class:`RatingModel`.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dprec.errors import DprecError
from dprec.protocol.messages import (
    HEADER,
    I64_RANGE,
    MAX_ITEMS,
    Message,
    MessageError,
    ValueReports,
    check_length,
    int_array,
    integer_field,
    real_array,
    unpack_fixed,
)

__all__ = ["RatingBatch", "RatingModel", "RatingReports", "RatingUpload", "Scale"]


@dataclass(frozen=True)
class Scale:
    """The public rating scale [low, high] (1..5 stars on MovieLens); min-max normalisation
    x = (r - low)/(high - low) maps it onto [0, 1] (seed 001 Sec. IV-A)."""

    low: float
    """Smallest rating on the scale."""
    high: float
    """Largest rating on the scale."""

    def __post_init__(self) -> None:
        lo, hi = float(self.low), float(self.high)
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise DprecError(f"rating scale must be finite with low < high, "
                             f"got low={self.low}, high={self.high}")
        object.__setattr__(self, "low", lo)
        object.__setattr__(self, "high", hi)

    @property
    def width(self) -> float:
        return self.high - self.low

    def normalise(self, ratings: np.ndarray) -> np.ndarray:
        """(r - low)/(high - low), clipped to [0, 1] (a rating off the scale counts as its end)."""
        x = (np.asarray(ratings, np.float64) - self.low) / self.width
        return np.clip(x, 0.0, 1.0)

    def denormalise(self, x: np.ndarray) -> np.ndarray:
        """low + (high - low) x, not clipped (noisy estimates stay unbiased)."""
        return self.low + self.width * np.asarray(x, np.float64)


@dataclass(frozen=True, eq=False)
class RatingReports:
    """A batch of clients' uploads: report j is (``users[j]``, ``items[j]``, ``values[j]``),
    sorted by (user, item); each user reports an item at most once.

    ``values`` are in the mechanism's report space (e.g. +-1 for Duchi's mechanism); the
    server decodes them. The user id travels with the reports (no proxy in seed 001).
    """

    users: np.ndarray
    items: np.ndarray
    values: np.ndarray

    def __post_init__(self) -> None:
        u = np.ascontiguousarray(self.users)
        i = np.ascontiguousarray(self.items)
        v = np.ascontiguousarray(self.values, dtype=np.float64)
        if u.ndim != 1 or i.shape != u.shape or v.shape != u.shape:
            raise DprecError(f"users, items and values must be 1-D of one length, got shapes "
                             f"{u.shape}, {i.shape}, {v.shape}")
        for name, a, top in (("users", u, None), ("items", i, MAX_ITEMS - 1)):
            if a.size and a.dtype.kind not in "iu":
                raise DprecError(f"{name} must hold integer ids, got dtype {a.dtype}")
            if a.size and (int(a.min()) < 0 or (top is not None and int(a.max()) > top)):
                raise DprecError(f"{name} must be in [0, {top if top is not None else 'inf'}], "
                                 f"got values in [{int(a.min())}, {int(a.max())}]")
        if v.size and not np.isfinite(v).all():
            raise DprecError("values must be finite, got NaN or inf")
        u = u.astype(np.int64, copy=False)
        i = i.astype(np.int32, copy=False)
        if u.size > 1:
            du, di = np.diff(u), np.diff(i.astype(np.int64))
            if not np.all((du > 0) | ((du == 0) & (di > 0))):
                raise DprecError("reports must be sorted by (user, item) with no item twice "
                                 "per user")
        object.__setattr__(self, "users", u)
        object.__setattr__(self, "items", i)
        object.__setattr__(self, "values", v)

    def __len__(self) -> int:
        return int(self.users.size)

    @property
    def clients(self) -> np.ndarray:
        """The distinct senders, sorted."""
        return np.unique(self.users)

    def to_messages(self) -> list[ValueReports]:
        """One wire message per client (``factors`` all 0; values rounded to float32)."""
        ids, starts = np.unique(self.users, return_index=True)
        bounds = np.append(starts, self.users.size)
        return [ValueReports(int(c), self.items[a:b], np.zeros(b - a, np.uint8),
                             self.values[a:b])
                for c, a, b in zip(ids, bounds[:-1], bounds[1:], strict=True)]

    @classmethod
    def from_messages(cls, messages: list[ValueReports]) -> RatingReports:
        """Stack client messages (the inverse of :meth:`to_messages`, in sender order)."""
        if not messages:
            return cls(np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0))
        order = sorted(messages, key=lambda m: m.client_id)
        users = np.concatenate([np.full(m.items.size, m.client_id, np.int64) for m in order])
        items = np.concatenate([m.items for m in order])
        values = np.concatenate([m.values.astype(np.float64) for m in order])
        sort = np.lexsort((items, users))
        return cls(users[sort], items[sort], values[sort])


# -- the wire messages of the services (kinds 20-22: this system's own) -----------------------

_UPLOAD = struct.Struct("<qI")  # client_id, k
_BATCH = struct.Struct("<Q")  # m
_MODEL = struct.Struct("<IIId")  # n_users, n_items, factors, mu


@dataclass(frozen=True, eq=False)
class RatingUpload(Message):
    """One client's upload: ``k`` reports (item, value), items strictly increasing.

    Wire: client_id i64, k u32, k i32 items, k f64 values (finite; lossless).
    """

    KIND: ClassVar[int] = 20

    client_id: int
    items: np.ndarray
    values: np.ndarray

    def __post_init__(self) -> None:
        client_id = integer_field("client_id", self.client_id, *I64_RANGE)
        object.__setattr__(self, "client_id", client_id)
        items = int_array("items", self.items, "<i4", 0, MAX_ITEMS - 1)
        values = real_array("values", self.values, 1, "<f8")
        if items.size != values.size:
            raise MessageError(f"items and values must have one length, got {items.size} "
                               f"and {values.size}")
        if items.size > 1 and not np.all(np.diff(items) > 0):
            raise MessageError("items must be strictly increasing (one report per item)")
        object.__setattr__(self, "items", items)
        object.__setattr__(self, "values", values)

    @property
    def k(self) -> int:
        return int(self.items.size)

    @staticmethod
    def serialized_size(k: int) -> int:
        return HEADER.size + _UPLOAD.size + 12 * k

    @property
    def nbytes(self) -> int:
        return self.serialized_size(self.k)

    def _parts(self) -> list[bytes | memoryview]:
        return [_UPLOAD.pack(self.client_id, self.k), memoryview(self.items),
                memoryview(self.values)]

    @classmethod
    def _parse(cls, payload: memoryview) -> RatingUpload:
        (client_id, k), off = unpack_fixed(cls.__name__, payload, _UPLOAD)
        body = payload[off:]
        check_length(cls.__name__, body, 12 * k, f"{k} reports")
        return cls(client_id, np.frombuffer(body, "<i4", k).copy(),
                   np.frombuffer(body, "<f8", k, 4 * k).copy())


@dataclass(frozen=True, eq=False)
class RatingBatch(Message):
    """A forwarded batch: report j is (``users[j]``, ``items[j]``, ``values[j]``), sorted by
    (user, item), each (user, item) once: a :class:`RatingReports` on the wire.

    Wire: m u64, m i64 users (>= 0), m i32 items, m f64 values (finite; lossless).
    """

    KIND: ClassVar[int] = 21

    users: np.ndarray
    items: np.ndarray
    values: np.ndarray

    def __post_init__(self) -> None:
        users = int_array("users", self.users, "<i8", 0, I64_RANGE[1])
        items = int_array("items", self.items, "<i4", 0, MAX_ITEMS - 1)
        values = real_array("values", self.values, 1, "<f8")
        if not users.size == items.size == values.size:
            raise MessageError(f"users, items and values must have one length, got "
                               f"{users.size}, {items.size}, {values.size}")
        if users.size > 1:
            du, di = np.diff(users), np.diff(items.astype(np.int64))
            if not np.all((du > 0) | ((du == 0) & (di > 0))):
                raise MessageError("reports must be sorted by (user, item), each pair once")
        for name, a in (("users", users), ("items", items), ("values", values)):
            object.__setattr__(self, name, a)

    def __len__(self) -> int:
        return int(self.users.size)

    @property
    def n_clients(self) -> int:
        """Distinct senders (what the server counts a batch in: whole submissions)."""
        return int(np.unique(self.users).size)

    @staticmethod
    def serialized_size(m: int) -> int:
        return HEADER.size + _BATCH.size + 20 * m

    @property
    def nbytes(self) -> int:
        return self.serialized_size(len(self))

    def _parts(self) -> list[bytes | memoryview]:
        return [_BATCH.pack(len(self)), memoryview(self.users), memoryview(self.items),
                memoryview(self.values)]

    @classmethod
    def _parse(cls, payload: memoryview) -> RatingBatch:
        (m,), off = unpack_fixed(cls.__name__, payload, _BATCH)
        body = payload[off:]
        check_length(cls.__name__, body, 20 * m, f"{m} reports")
        return cls(np.frombuffer(body, "<i8", m).copy(),
                   np.frombuffer(body, "<i4", m, 8 * m).copy(),
                   np.frombuffer(body, "<f8", m, 12 * m).copy())

    def reports(self) -> RatingReports:
        """The batch as the server role reads it."""
        return RatingReports(self.users, self.items, self.values)


@dataclass(frozen=True, eq=False)
class RatingModel(Message):
    """The server's Funk SVD, float64 (lossless): global mean ``mu``, user and item factors
    and biases, and which users and items had a report.

    Wire: n_users u32, n_items u32, factors u32, mu f64; U (n_users x F f64), I (n_items x F
    f64), b_u, b_i (f64), the known users and items (u8 0/1).
    """

    KIND: ClassVar[int] = 22

    mu: float
    user_factors: np.ndarray
    item_factors: np.ndarray
    user_biases: np.ndarray
    item_biases: np.ndarray
    user_known: np.ndarray
    item_known: np.ndarray

    def __post_init__(self) -> None:
        mu = float(self.mu)
        if not math.isfinite(mu):
            raise MessageError(f"mu must be finite, got {mu}")
        U = real_array("user_factors", self.user_factors, 2, "<f8")
        V = real_array("item_factors", self.item_factors, 2, "<f8")
        if U.shape[1] != V.shape[1]:
            raise MessageError(f"user and item factors must have one width, got "
                               f"{U.shape[1]} and {V.shape[1]}")
        m, n = U.shape[0], V.shape[0]
        parts = {"user_biases": (self.user_biases, m), "item_biases": (self.item_biases, n)}
        for name, (a, size) in parts.items():
            arr = real_array(name, a, 1, "<f8")
            if arr.size != size:
                raise MessageError(f"{name} must have {size} entries, got {arr.size}")
            object.__setattr__(self, name, arr)
        for name, a, size in (("user_known", self.user_known, m),
                              ("item_known", self.item_known, n)):
            arr = int_array(name, a, "u1", 0, 1)
            if arr.size != size:
                raise MessageError(f"{name} must have {size} entries, got {arr.size}")
            object.__setattr__(self, name, arr)
        object.__setattr__(self, "mu", mu)
        object.__setattr__(self, "user_factors", U)
        object.__setattr__(self, "item_factors", V)

    @staticmethod
    def serialized_size(n_users: int, n_items: int, factors: int) -> int:
        return HEADER.size + _MODEL.size + 8 * (n_users + n_items) * (factors + 1) \
            + n_users + n_items

    @property
    def nbytes(self) -> int:
        (m, f), n = self.user_factors.shape, self.item_factors.shape[0]
        return self.serialized_size(m, n, f)

    def _parts(self) -> list[bytes | memoryview]:
        (m, f), n = self.user_factors.shape, self.item_factors.shape[0]
        return [_MODEL.pack(m, n, f, self.mu), memoryview(self.user_factors).cast("B"),
                memoryview(self.item_factors).cast("B"), memoryview(self.user_biases),
                memoryview(self.item_biases), memoryview(self.user_known),
                memoryview(self.item_known)]

    @classmethod
    def _parse(cls, payload: memoryview) -> RatingModel:
        (m, n, f, mu), off = unpack_fixed(cls.__name__, payload, _MODEL)
        body = payload[off:]
        check_length(cls.__name__, body, 8 * (m + n) * (f + 1) + m + n,
                     f"{m} users, {n} items and {f} factors")
        arrays, at = [], 0
        for count, dtype, shape in ((m * f, "<f8", (m, f)), (n * f, "<f8", (n, f)),
                                    (m, "<f8", (m,)), (n, "<f8", (n,)), (m, "u1", (m,)),
                                    (n, "u1", (n,))):
            a = np.frombuffer(body, dtype, count, at).reshape(shape).copy()
            arrays.append(a)
            at += a.nbytes
        return cls(mu, *arrays)
