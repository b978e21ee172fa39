"""What the rating clients and the server share: the public rating scale and the upload batch.

Seed 001 (SYSTEMS.md §3): each client uploads, once, one perturbed value per reported item.
:class:`RatingReports` is the simulation's batch of many clients' uploads; it expands to the
wire messages of :mod:`dprec.protocol.messages` (one ``ValueReports`` per client, factor 0,
values as float32) and back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dprec.errors import DprecError
from dprec.protocol.messages import MAX_ITEMS, ValueReports

__all__ = ["RatingReports", "Scale"]


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
