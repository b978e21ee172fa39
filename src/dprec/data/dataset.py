"""The dataset type: an interaction matrix with ratings, timestamps, side features and id maps."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
import scipy.sparse as sp

from dprec.errors import DataError

__all__ = ["Dataset", "check_rating_scale", "item_counts"]


@dataclass(frozen=True)
class Dataset:
    """Interactions of ``n_users`` users with ``n_items`` items.

    ``matrix`` is a canonical CSR matrix (sorted indices, no duplicates, no explicit zeros)
    whose data are the ratings (1.0 for implicit feedback). ``timestamps`` is aligned with
    ``matrix.data``: ``timestamps[k]`` is the time of the interaction stored at ``data[k]``.
    ``user_ids``/``item_ids`` map internal indices back to the raw ids of the source.
    ``history`` records every transformation applied (filters, binarisation) in order.
    ``rating_scale`` is the declared, public (low, high) range of the ratings (e.g. 1..5
    stars), None when none is declared (implicit feedback, a file with no stated scale):
    a local-DP mechanism normalises ratings on it, so it must never be read off the data.
    """

    name: str
    matrix: sp.csr_matrix
    timestamps: np.ndarray | None = None
    user_ids: np.ndarray | None = None
    item_ids: np.ndarray | None = None
    user_features: pd.DataFrame | None = None
    item_features: pd.DataFrame | None = None
    history: tuple[str, ...] = field(default_factory=tuple)
    rating_scale: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        m = self.matrix
        if not sp.issparse(m) or m.format != "csr":
            raise DataError("Dataset.matrix must be a scipy.sparse CSR matrix")
        if self.rating_scale is not None:
            object.__setattr__(self, "rating_scale", check_rating_scale(self.rating_scale, m))
        if self.timestamps is not None and len(self.timestamps) != m.nnz:
            raise DataError(
                f"timestamps must align with matrix.data: {len(self.timestamps)} != {m.nnz}"
            )
        for name, ids, n in (("user_ids", self.user_ids, m.shape[0]),
                             ("item_ids", self.item_ids, m.shape[1])):
            if ids is not None and len(ids) != n:
                raise DataError(f"{name} has {len(ids)} entries for {n} rows/columns")

    @property
    def n_users(self) -> int:
        return int(self.matrix.shape[0])

    @property
    def n_items(self) -> int:
        return int(self.matrix.shape[1])

    @property
    def n_interactions(self) -> int:
        return int(self.matrix.nnz)

    @property
    def density(self) -> float:
        return self.n_interactions / max(1, self.n_users * self.n_items)

    def binary(self) -> sp.csr_matrix:
        """The 0/1 interaction matrix (float32)."""
        b = self.matrix.copy().astype(np.float32)
        b.data[:] = 1.0
        return b

    def with_history(self, step: str, **changes: object) -> Dataset:
        """A copy with ``changes`` applied and ``step`` appended to the history."""
        return replace(self, history=(*self.history, step), **changes)

    @classmethod
    def from_triples(
        cls,
        name: str,
        users: np.ndarray,
        items: np.ndarray,
        ratings: np.ndarray | None = None,
        timestamps: np.ndarray | None = None,
        *,
        user_features: pd.DataFrame | None = None,
        item_features: pd.DataFrame | None = None,
        all_user_ids: np.ndarray | None = None,
        all_item_ids: np.ndarray | None = None,
        rating_scale: tuple[float, float] | None = None,
    ) -> Dataset:
        """Build from raw (user, item, rating, timestamp) arrays of any id type.

        Ratings must be > 0: a stored rating is an interaction, so a 0 or negative one would
        silently count as a positive. Raw ids are mapped to 0..n-1 in sorted order
        (``all_*_ids`` may add ids with no interactions). Duplicate (user, item) pairs keep
        the latest record. Side-feature frames, if given, are indexed by raw id and
        reordered to the internal order. ``rating_scale``: the declared (low, high) scale,
        which every rating must lie in.
        """
        users = np.asarray(users)
        items = np.asarray(items)
        if users.shape != items.shape or users.ndim != 1:
            raise DataError("users and items must be 1-d arrays of equal length")
        n = len(users)
        ratings = np.ones(n, np.float32) if ratings is None else np.asarray(ratings, np.float32)
        if ratings.shape != (n,):
            raise DataError("ratings must have one entry per interaction")
        if timestamps is not None:
            timestamps = np.asarray(timestamps, np.int64)
            if timestamps.shape != (n,):
                raise DataError("timestamps must have one entry per interaction")
        if n and not np.all(np.isfinite(ratings)):
            raise DataError("ratings contain NaN or infinite values")
        if n and not ratings.min() > 0:
            raise DataError(
                f"ratings must be > 0 (every stored rating counts as an interaction), got "
                f"{int(np.sum(ratings <= 0)):,} ratings <= 0 (e.g. {ratings.min():g}); drop "
                "them or binarise with a threshold first"
            )
        u, uid = _sorted_codes(users, all_user_ids)
        i, iid = _sorted_codes(items, all_item_ids)
        ts = np.zeros(n, np.int64) if timestamps is None else timestamps
        # canonical order (user, item, time); keep the last record of each (user, item)
        order = np.lexsort((ts, i, u))
        u, i, r, ts = u[order], i[order], ratings[order], ts[order]
        last = np.ones(n, bool)
        if n:
            last[:-1] = (u[1:] != u[:-1]) | (i[1:] != i[:-1])
        u, i, r, ts = u[last], i[last], r[last], ts[last]
        indptr = np.zeros(len(uid) + 1, np.int64)
        np.cumsum(np.bincount(u, minlength=len(uid)), out=indptr[1:])
        matrix = sp.csr_matrix((r, i.astype(np.int32), indptr), shape=(len(uid), len(iid)))
        uf = user_features.reindex(uid) if user_features is not None else None
        itf = item_features.reindex(iid) if item_features is not None else None
        return cls(
            name=name,
            matrix=matrix,
            timestamps=None if timestamps is None else ts,
            user_ids=uid,
            item_ids=iid,
            user_features=uf,
            item_features=itf,
            rating_scale=rating_scale,
        )

    def content_sha256(self) -> str:
        """sha256 of the interactions (raw ids, ratings, timestamps) in canonical order.

        The same data give the same digest whatever the file's path, format or row order;
        side features are not included.
        """
        h = hashlib.sha256(b"dprec-interactions-v1")

        def part(tag: bytes, data: bytes) -> None:
            h.update(tag + len(data).to_bytes(8, "little") + data)

        m = self.matrix
        for tag, ids, n in ((b"U", self.user_ids, m.shape[0]), (b"I", self.item_ids, m.shape[1])):
            ids = np.arange(n) if ids is None else np.asarray(ids)
            if ids.dtype.kind in "iub":
                part(tag + b"i", ids.astype("<i8").tobytes())
            else:
                part(tag + b"s", "\x1f".join(map(str, ids.tolist())).encode("utf-8"))
        part(b"P", np.asarray(m.indptr, "<i8").tobytes())
        part(b"X", np.asarray(m.indices, "<i8").tobytes())
        part(b"R", np.asarray(m.data, "<f4").tobytes())
        if self.timestamps is not None:
            part(b"T", np.asarray(self.timestamps, "<i8").tobytes())
        return h.hexdigest()

    def triples(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(user index, item index, rating) arrays in canonical order."""
        m = self.matrix
        users = np.repeat(np.arange(m.shape[0], dtype=np.int64), np.diff(m.indptr))
        return users, m.indices.astype(np.int64), m.data

    def summary(self) -> dict[str, float | int | str]:
        """Users, items, interactions, sparsity and activity quantiles."""
        per_user = np.diff(self.matrix.indptr)
        per_item = item_counts(self.matrix)
        q = [0.0, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0]
        out: dict[str, float | int | str] = {
            "name": self.name,
            "users": self.n_users,
            "items": self.n_items,
            "interactions": self.n_interactions,
            "sparsity": 1.0 - self.density,
        }
        for label, counts in (("user", per_user), ("item", per_item)):
            for qq, v in zip(q, np.quantile(counts, q) if len(counts) else [0] * len(q),
                             strict=True):
                out[f"{label}_activity_q{int(qq * 100)}"] = float(v)
        if self.n_interactions:
            r = self.matrix.data
            out["rating_min"] = float(r.min())
            out["rating_max"] = float(r.max())
        if self.rating_scale is not None:
            out["rating_scale"] = "{:g}..{:g}".format(*self.rating_scale)
        return out


def item_counts(matrix: sp.csr_matrix, chunk: int = 1 << 20) -> np.ndarray:
    """Interactions per item (column), counted in chunks: ``np.bincount`` of all the int32
    indices at once would first copy them to int64 (8 bytes per interaction, 5 GB at
    630M interactions)."""
    counts = np.zeros(matrix.shape[1], np.int64)
    indices = matrix.indices
    for start in range(0, len(indices), chunk):
        counts += np.bincount(indices[start:start + chunk], minlength=matrix.shape[1])
    return counts


def _sorted_codes(ids: np.ndarray, extra: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(index of each id among the sorted distinct ids, those ids), ``extra`` adding ids.

    Hashes, then sorts the distinct ids only: text ids (an object array of str) are never
    copied into a fixed-width numpy string array, whose width would be the longest id's.
    """
    values = ids if extra is None else np.concatenate([ids, np.asarray(extra)])
    try:
        codes, uniques = pd.factorize(values, sort=True)
    except TypeError as e:
        raise DataError(f"ids must be all numbers or all text, not a mix ({e})") from None
    if len(codes) and codes.min() < 0:
        raise DataError("ids must not be missing (NaN or None)")
    return codes[:len(ids)].astype(np.int64), np.asarray(uniques)


def check_rating_scale(scale: object, matrix: sp.csr_matrix | None = None
                       ) -> tuple[float, float]:
    """``scale`` as a (low, high) pair of finite floats with low < high, holding every rating
    of ``matrix``; :class:`DataError` otherwise."""
    try:
        low, high = (float(v) for v in scale)  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        raise DataError(f"rating_scale must be a (low, high) pair of numbers, got "
                        f"{scale!r}") from None
    if not (np.isfinite(low) and np.isfinite(high) and low < high):
        raise DataError(f"rating_scale must be finite with low < high, got ({low}, {high})")
    if matrix is not None and matrix.nnz:
        r = matrix.data
        if r.min() < low or r.max() > high:
            bad = r[(r < low) | (r > high)]
            raise DataError(f"{bad.size:,} ratings lie outside the declared scale "
                            f"[{low:g}, {high:g}] (e.g. {bad[0]:g}); declare the scale the "
                            "data use")
    return low, high
