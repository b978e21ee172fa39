"""The Frappe loader (Baltrunas et al. 2015, context-aware app usage)."""

from __future__ import annotations

import csv
import logging
from pathlib import Path

import numpy as np
import pandas as pd

from dprec.data.dataset import Dataset
from dprec.data.loaders.common import (
    _CANONICAL_INT,
    _check_nonempty,
    _read_table,
    _require,
    _resolve_dir,
    _Table,
    _with_source,
)
from dprec.errors import DataError

__all__ = ["FRAPPE_COLUMNS", "FRAPPE_CONTEXT", "load_frappe"]

log = logging.getLogger(__name__)


FRAPPE_COLUMNS = ("user", "item", "cnt", "daytime", "weekday", "isweekend", "homework",
                  "cost", "weather", "country", "city")
FRAPPE_CONTEXT = ("daytime", "weekday", "isweekend", "homework", "weather", "country", "city")


def load_frappe(path: str | Path, *, source: str | None = None) -> Dataset:
    """Frappe (Baltrunas et al. 2015, context-aware app usage) from ``path``: the folder
    holding ``frappe.csv`` (or its ``frappe`` subfolder), or the file itself.

    ``frappe.csv`` is tab-separated with header ``user item cnt daytime weekday isweekend
    homework cost weather country city``; one row is a (user, app, context) record and
    ``cnt`` how often the user used the app in that context. The rating of (user, app) is
    ``cnt``, which must be an integer >= 1. A pair logged in several contexts keeps its
    last row in file order (the :meth:`Dataset.from_triples` rule for duplicates, with no
    timestamps to order by); there are no timestamps.

    ``user_features``: per user, the most frequent value of each context column
    (``daytime``, ``weekday``, ``isweekend``, ``homework``, ``weather``, ``country``,
    ``city``) over the user's rows, ties broken by the smallest value; the file's
    ``unknown`` is a value like any other. ``item_features``: ``cost`` (most frequent per
    app, same tie rule) and, if ``meta.csv`` (tab-separated, with ``item`` and
    ``category`` columns, ``unknown`` for missing) lies beside ``frappe.csv``,
    ``category`` (missing: NaN). A column whose every value is an integer (``city`` codes)
    is kept as int64.
    """
    p = Path(path).expanduser()
    if p.is_file():
        folder, fpath = p.parent, p
    else:
        folder = _resolve_dir(p, "frappe.csv", ("frappe",))
        fpath = folder / "frappe.csv"
    def read(**dtype: object) -> pd.DataFrame:
        # no default NA strings: a country or city called "NA" is a value, not a gap
        df = _read_table(fpath, sep="\t", header=0, keep_default_na=False,
                         quoting=csv.QUOTE_NONE, **dtype)
        df.columns = [str(c).strip() for c in df.columns]
        return df

    t = _Table(fpath, read(), 1, reread=lambda: read(dtype=str))
    _require(t.df, FRAPPE_COLUMNS, fpath)
    _check_nonempty(len(t), fpath)
    users, items = t.ids("user"), t.ids("item")
    cnt = t.ids("cnt", "an integer count")
    if not cnt.min() >= 1:
        row = int(np.flatnonzero(cnt < 1)[0])
        raise DataError(f"{t.at(row, 'cnt')}: cnt {cnt[row]} is not >= 1; cnt counts how "
                        "often the user used the app, and every row is an interaction "
                        "(the file is corrupt or not Frappe's frappe.csv)")
    context = pd.DataFrame({col: _int_or_text(t, col) for col in FRAPPE_CONTEXT})
    user_features = _modes(context, users, "user_id")
    item_features = _modes(pd.DataFrame({"cost": _int_or_text(t, "cost")}), items, "item_id")
    mpath = folder / "meta.csv"
    if mpath.is_file():
        category = _frappe_categories(mpath)
        item_features["category"] = category.reindex(item_features.index).array
    else:
        log.info("%s not found: loading Frappe without app categories", mpath)
    ds = Dataset.from_triples("frappe", users, items, cnt.astype(np.float32),
                              user_features=user_features, item_features=item_features)
    return _with_source(ds, folder, source)


def _int_or_text(table: _Table, column: str) -> pd.Series:
    """A low-cardinality column as stripped text, or int64 when every value is an integer
    written plainly; DataError for an empty value. Text is handled once per distinct value."""
    col = table.df[column]
    if pd.api.types.is_integer_dtype(col.dtype):
        return col.astype(np.int64)
    codes, uniques = pd.factorize(col)
    text = pd.Series(uniques, dtype=object).astype(str).str.strip()
    blank = np.flatnonzero(text.to_numpy() == "")
    bad = (codes < 0) | np.isin(codes, blank)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise DataError(f"{table.at(row, column)}: empty value; Frappe writes a missing "
                        "context as 'unknown' (truncated or corrupt file?)")
    values = text.to_numpy(dtype=object)
    if text.str.fullmatch(_CANONICAL_INT).all():
        try:
            values = text.astype(np.int64).to_numpy()
        except (OverflowError, ValueError):
            pass
    return pd.Series(values[codes])


def _modes(columns: pd.DataFrame, keys: np.ndarray, index_name: str) -> pd.DataFrame:
    """Per key, the most frequent value of each column (ties: the smallest value)."""
    out = {}
    for col in columns.columns:
        counts = (pd.DataFrame({"key": keys, "value": columns[col].to_numpy()})
                  .value_counts(sort=False).rename("n").reset_index())
        counts = counts.sort_values(["key", "n", "value"], ascending=[True, False, True],
                                    kind="stable")
        first = counts.drop_duplicates("key", keep="first")
        out[col] = pd.Series(first["value"].to_numpy(), index=first["key"].to_numpy())
    frame = pd.DataFrame(out)
    frame.index.name = index_name
    return frame


def _frappe_categories(path: Path) -> pd.Series:
    """``category`` by app id from Frappe's ``meta.csv`` (``unknown`` -> missing)."""
    df = _read_table(path, sep="\t", header=0, dtype=str, keep_default_na=False,
                     quoting=csv.QUOTE_NONE)
    df.columns = [str(c).strip() for c in df.columns]
    _require(df, ["item", "category"], path)
    t = _Table(path, df, 1)
    ids = t.ids("item")
    dup = pd.Index(ids).duplicated()
    if dup.any():
        row = int(np.flatnonzero(dup)[0])
        raise DataError(f"{t.at(row, 'item')}: app {ids[row]} is listed twice; meta.csv "
                        "must hold one row per app")
    category = df["category"].str.strip()
    category = category.mask(category.isin(["", "unknown"]))
    return pd.Series(category.to_numpy(dtype=object), index=ids)
