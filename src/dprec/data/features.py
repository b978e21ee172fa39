"""Side features encoded for models that take no user/item ids as inputs (e.g. PrivRec).

:func:`side_features` turns a dataset's ``user_features``/``item_features`` frames into two
:class:`FeatureBlock` s aligned with the internal user/item order. Each column is encoded as
one of three kinds:

- ``"categorical"``: the sorted distinct values get codes 1..k, missing values (NaN, empty
  text) code 0, so the field's cardinality is k + 1. Numeric columns sort numerically, text
  columns as text.
- ``"numeric"``: min-max scaled to [0, 1] over the rows present (a constant column is all
  0); missing values become 0.
- ``"multi_hot"``: a ``|``-joined text column (MovieLens ``genres``); one 0/1 column per
  distinct tag, named ``genre=Action`` for ``genres`` and ``COLUMN=TAG`` otherwise. An item
  without tags (empty, missing, or MovieLens-20M's ``(no genres listed)``) gets an all-zero
  row; ML-100K's ``unknown`` genre flag is a tag like the others.

Codes, tag order and scaling depend only on the set of rows, never on their order, so the
same data read from a permuted file give the same arrays. They are computed over the dataset
passed in: after a filter, values held only by dropped users or items get no code.

Default fields per data set (see :data:`DEFAULT_FIELDS`) follow PrivRec (§3.2): MovieLens
user age, gender, occupation and item genres; Frappe's context columns as user features and
``cost`` (and ``category`` where meta.csv was read) as item features. Other data sets have
their columns' kinds inferred (:func:`infer_fields`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dprec.data.dataset import Dataset
from dprec.data.loaders import FRAPPE_CONTEXT
from dprec.errors import DataError, DprecError

__all__ = [
    "DEFAULT_FIELDS", "FeatureBlock", "FieldSpec", "KINDS", "MAX_CATEGORIES",
    "MAX_NUMERIC_AS_CATEGORICAL", "SideFeatures", "infer_fields", "side_features",
]

log = logging.getLogger(__name__)

KINDS: tuple[str, ...] = ("categorical", "numeric", "multi_hot")
"""The kinds a column can be encoded as."""


@dataclass(frozen=True)
class FieldSpec:
    """Default fields of a known data set: ``required`` columns must be in the frame,
    ``optional`` ones are used when present (Frappe's ``category`` needs meta.csv)."""

    required: Mapping[str, str]
    optional: Mapping[str, str] | None = None

    def resolve(self, columns: pd.Index) -> dict[str, str]:
        fields = dict(self.required)
        fields.update({c: k for c, k in (self.optional or {}).items() if c in columns})
        return fields


_ML_GENRES = FieldSpec({"genres": "multi_hot"})
DEFAULT_FIELDS: dict[str, tuple[FieldSpec, FieldSpec]] = {
    "ml-100k": (FieldSpec({"age": "numeric", "gender": "categorical",
                           "occupation": "categorical"}), _ML_GENRES),
    "ml-1m": (FieldSpec({"age": "categorical", "gender": "categorical",
                         "occupation": "categorical"}), _ML_GENRES),
    "frappe": (FieldSpec(dict.fromkeys(FRAPPE_CONTEXT, "categorical")),
               FieldSpec({"cost": "categorical"}, {"category": "categorical"})),
}
"""(user fields, item fields) by data set name; a name with a suffix (``ml-1m/validation``,
``ml-1m-5core``) uses its base name's defaults."""

_DATASETS_WITH_FEATURES = "ml-100k, ml-1m and frappe"
_MISSING_TAGS = frozenset({"", "(no genres listed)"})
_TAG_PREFIX = {"genres": "genre"}
_SKIPPED_NAMES = frozenset({
    "title", "name", "zip_code", "zip", "zipcode", "description", "desc", "short desc",
    "url", "icon", "package", "developer",
})
_ID_LIKE = re.compile(r"(?:.*[_ ])?ids?|.*(?:Ids?|ID)")
MAX_NUMERIC_AS_CATEGORICAL = 20
"""Inference: a numeric column with more distinct values than this is ``numeric``."""
MAX_CATEGORIES = 1000
"""Inference: a column with more distinct values than this (titles, zip codes) is skipped."""


@dataclass(frozen=True)
class FeatureBlock:
    """Encoded side features of n users or n items."""

    categorical: np.ndarray
    """(n, n_cat) int64 codes; 0 = missing/unknown, 1..card-1 = values in sorted order."""
    cardinalities: tuple[int, ...]
    """Per categorical field: the number of codes including 0."""
    categorical_names: tuple[str, ...]
    numeric: np.ndarray
    """(n, n_num) float32 in [0, 1] (min-max scaled; missing -> 0)."""
    numeric_names: tuple[str, ...]
    multi_hot: np.ndarray
    """(n, n_tags) float32 0/1."""
    multi_hot_names: tuple[str, ...]
    """``COLUMN=TAG`` per column of ``multi_hot`` (``genre=Action`` for ``genres``)."""

    def __post_init__(self) -> None:
        n = self.categorical.shape[0] if self.categorical.ndim == 2 else -1
        for label, arr, names, dtype in (
                ("categorical", self.categorical, self.categorical_names, np.int64),
                ("numeric", self.numeric, self.numeric_names, np.float32),
                ("multi_hot", self.multi_hot, self.multi_hot_names, np.float32)):
            if arr.dtype != dtype or arr.ndim != 2:
                raise DprecError(f"FeatureBlock.{label} must be a 2-d {np.dtype(dtype)} "
                                 f"array, got {arr.ndim}-d {arr.dtype}")
            if arr.shape != (n, len(names)):
                raise DprecError(f"FeatureBlock.{label} has shape {arr.shape}, expected "
                                 f"({n}, {len(names)}) for {len(names)} names")
        if len(self.cardinalities) != len(self.categorical_names):
            raise DprecError(f"FeatureBlock.cardinalities has {len(self.cardinalities)} "
                             f"entries for {len(self.categorical_names)} categorical fields")
        if n and self.categorical.size and not (
                (self.categorical >= 0).all()
                and (self.categorical < np.asarray(self.cardinalities)).all()):
            raise DprecError("FeatureBlock.categorical codes must lie in 0..cardinality-1")

    @property
    def n(self) -> int:
        """Number of rows (users or items)."""
        return int(self.categorical.shape[0])

    @property
    def width(self) -> int:
        """Length of the one-hot encoding: every code of every categorical field, plus the
        numeric and multi-hot columns."""
        return sum(self.cardinalities) + len(self.numeric_names) + len(self.multi_hot_names)

    def take(self, index: np.ndarray) -> FeatureBlock:
        """The rows ``index`` (integer positions or a boolean mask of length n), with the
        same fields, cardinalities and names."""
        idx = np.asarray(index)
        if idx.dtype == bool:
            if idx.shape != (self.n,):
                raise DprecError(f"take: a boolean mask must have shape ({self.n},), got "
                                 f"{idx.shape}")
        elif idx.dtype.kind not in "iu" and idx.size:
            raise DprecError(f"take: index must hold integers or booleans, got {idx.dtype}")
        else:
            idx = idx.astype(np.int64)
            if idx.size and not (-self.n <= idx.min() and idx.max() < self.n):
                raise DprecError(f"take: index values must lie in 0..{self.n - 1}, got "
                                 f"{idx.min()}..{idx.max()}")
        return FeatureBlock(
            categorical=self.categorical[idx], cardinalities=self.cardinalities,
            categorical_names=self.categorical_names, numeric=self.numeric[idx],
            numeric_names=self.numeric_names, multi_hot=self.multi_hot[idx],
            multi_hot_names=self.multi_hot_names,
        )

    def describe(self) -> dict[str, object]:
        """Field names and cardinalities (JSON-serialisable)."""
        return {
            "n": self.n,
            "categorical": dict(zip(self.categorical_names, map(int, self.cardinalities),
                                    strict=True)),
            "numeric": list(self.numeric_names),
            "multi_hot": list(self.multi_hot_names),
            "width": self.width,
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FeatureBlock):
            return NotImplemented
        return (self.cardinalities == other.cardinalities
                and self.categorical_names == other.categorical_names
                and self.numeric_names == other.numeric_names
                and self.multi_hot_names == other.multi_hot_names
                and np.array_equal(self.categorical, other.categorical)
                and np.array_equal(self.numeric, other.numeric)
                and np.array_equal(self.multi_hot, other.multi_hot))


@dataclass(frozen=True)
class SideFeatures:
    """Encoded user and item side features, rows in the dataset's internal order."""

    users: FeatureBlock
    items: FeatureBlock

    def describe(self) -> dict[str, object]:
        """Field names and cardinalities of both blocks, for results files."""
        return {"users": self.users.describe(), "items": self.items.describe()}


# --------------------------------------------------------------------------- encoding


def side_features(ds: Dataset, user_fields: Mapping[str, str] | None = None,
                  item_fields: Mapping[str, str] | None = None) -> SideFeatures:
    """Encode ``ds``'s user and item side features.

    ``user_fields``/``item_fields`` map a column of ``ds.user_features``/``ds.item_features``
    to its kind (``"categorical"``, ``"numeric"`` or ``"multi_hot"``); fields are encoded in
    the mapping's order. None takes the data set's defaults (:data:`DEFAULT_FIELDS`, matched
    on the base of ``ds.name``), else infers the kinds (:func:`infer_fields`).
    """
    defaults = _defaults_for(ds.name)
    out = []
    for k, (who, frame, fields, n) in enumerate((
            ("user", ds.user_features, user_fields, ds.n_users),
            ("item", ds.item_features, item_fields, ds.n_items))):
        if frame is None:
            raise DataError(
                f"dataset {ds.name!r} has no {who} features; side features come with "
                f"{_DATASETS_WITH_FEATURES} (loaded with their {who} files); generic csv: and "
                "synthetic data sets have none"
            )
        if len(frame) != n:
            raise DataError(f"dataset {ds.name!r}: {who}_features has {len(frame)} rows for "
                            f"{n} {who}s")
        what = f"{who}_fields"
        if fields is None:
            if defaults is not None:
                fields = defaults[k].resolve(frame.columns)
                what = f"{who}_fields (the defaults for {ds.name!r})"
            else:
                fields = infer_fields(frame)
                what = f"{who}_fields (inferred)"
                log.info("%s: inferred %s fields %s", ds.name, who, fields)
        out.append(_encode_block(frame, dict(fields), what, ds.name))
    return SideFeatures(users=out[0], items=out[1])


def infer_fields(frame: pd.DataFrame) -> dict[str, str]:
    """Kinds inferred from a side-feature frame: ``genres`` is multi-hot; a numeric column
    with more than :data:`MAX_NUMERIC_AS_CATEGORICAL` distinct values is numeric; other
    columns with at most :data:`MAX_CATEGORIES` distinct values are categorical. Free text
    and id-like columns (``title``, ``zip_code``, ``name``, ``description``, ``*_id``, ...)
    and columns with more distinct values are skipped."""
    fields: dict[str, str] = {}
    for col in frame.columns:
        name = str(col)
        s = frame[col]
        if name == "genres":
            fields[name] = "multi_hot"
            continue
        if name.lower() in _SKIPPED_NAMES or _ID_LIKE.fullmatch(name):
            continue
        distinct = s.nunique(dropna=True)
        numeric = pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(
            s.dtype)
        if numeric and distinct > MAX_NUMERIC_AS_CATEGORICAL:
            fields[name] = "numeric"
        elif distinct <= MAX_CATEGORIES:
            fields[name] = "categorical"
    return fields


def _defaults_for(name: str) -> tuple[FieldSpec, FieldSpec] | None:
    """The defaults of the known data set ``name`` is (``ml-1m``) or derives from
    (``ml-1m/validation``, ``ML-1M-5core``); never ``ml-1m`` for ``ml-10m``."""
    low = name.strip().lower()
    for key in sorted(DEFAULT_FIELDS, key=len, reverse=True):
        if re.match(rf"{re.escape(key)}(?![a-z0-9])", low):
            return DEFAULT_FIELDS[key]
    return None


def _encode_block(frame: pd.DataFrame, fields: dict[str, str], what: str,
                  dataset: str) -> FeatureBlock:
    columns = [str(c) for c in frame.columns]
    for col, kind in fields.items():
        if col not in columns:
            raise DataError(f"{what}: {dataset!r} has no column {col!r}; its columns are "
                            f"{columns}")
        if kind not in KINDS:
            raise DataError(f"{what}[{col!r}]: kind must be one of {', '.join(KINDS)}, got "
                            f"{kind!r}")
    if not fields:
        raise DataError(f"{what}: nothing to encode for {dataset!r}; name at least one of "
                        f"its columns {columns} with a kind ({', '.join(KINDS)}), e.g. "
                        f"{what}={{{columns[0] if columns else 'COLUMN'!r}: 'categorical'}}")
    frame = frame.set_axis(columns, axis=1)
    n = len(frame)
    cat, cards, cat_names, num, num_names, hot, hot_names = [], [], [], [], [], [], []
    for col, kind in fields.items():
        s = frame[col].reset_index(drop=True)
        if kind == "categorical":
            codes, k = _categorical(s)
            cat.append(codes)
            cards.append(k + 1)
            cat_names.append(col)
        elif kind == "numeric":
            num.append(_numeric(s, f"{what}[{col!r}]", dataset))
            num_names.append(col)
        else:
            m, tags = _multi_hot(s)
            hot.append(m)
            prefix = _TAG_PREFIX.get(col, col)
            hot_names.extend(f"{prefix}={t}" for t in tags)
    return FeatureBlock(
        categorical=np.column_stack(cat).astype(np.int64) if cat else np.zeros((n, 0), np.int64),
        cardinalities=tuple(cards),
        categorical_names=tuple(cat_names),
        numeric=np.column_stack(num).astype(np.float32) if num else np.zeros((n, 0), np.float32),
        numeric_names=tuple(num_names),
        multi_hot=np.hstack(hot) if hot else np.zeros((n, 0), np.float32),
        multi_hot_names=tuple(hot_names),
    )


def _missing(s: pd.Series) -> pd.Series:
    """NaN/None/NA, and blank text, as missing."""
    if s.dtype == object or pd.api.types.is_string_dtype(s.dtype):
        s = s.mask(s.astype(str).str.strip() == "")
    return s


def _categorical(s: pd.Series) -> tuple[np.ndarray, int]:
    """Codes 1..k for the sorted distinct values, 0 for missing; and k."""
    s = _missing(s)
    try:
        codes, uniques = pd.factorize(s, sort=True, use_na_sentinel=True)
    except TypeError:  # mixed types in an object column: sort as text
        codes, uniques = pd.factorize(s.map(str, na_action="ignore"), sort=True,
                                      use_na_sentinel=True)
    return codes.astype(np.int64) + 1, len(uniques)


def _numeric(s: pd.Series, what: str, dataset: str) -> np.ndarray:
    s = _missing(s)
    values = pd.to_numeric(s, errors="coerce")
    bad = values.isna() & s.notna()
    if bad.any():
        example = s[bad].iloc[0]
        raise DataError(f"{what}: {dataset!r} has non-numeric values (e.g. {example!r}); "
                        "encode the column as 'categorical' instead")
    x = values.to_numpy(np.float64, na_value=np.nan)
    present = ~np.isnan(x)
    if np.isinf(x).any():
        raise DataError(f"{what}: {dataset!r} has infinite values")
    out = np.zeros(len(x), np.float32)
    if present.any():
        lo, hi = x[present].min(), x[present].max()
        if hi > lo:
            out[present] = ((x[present] - lo) / (hi - lo)).astype(np.float32)
    return out


def _multi_hot(s: pd.Series) -> tuple[np.ndarray, list[str]]:
    """0/1 rows over the sorted distinct tags of a ``|``-joined column."""
    n = len(s)
    parts = s.map(str, na_action="ignore").astype(object).str.split("|").explode()
    tags = parts.str.strip()
    keep = tags.notna().to_numpy() & ~tags.isin(_MISSING_TAGS).to_numpy()
    rows = parts.index.to_numpy()[keep]
    codes, uniques = pd.factorize(tags[keep], sort=True)
    out = np.zeros((n, len(uniques)), np.float32)
    out[rows, codes] = 1.0
    return out, [str(t) for t in uniques]
