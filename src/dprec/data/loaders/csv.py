"""The generic loader: interactions ``user,item[,rating][,timestamp]`` from any delimited
text file, columns found by header name or position."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from dprec.data.dataset import Dataset
from dprec.data.loaders.common import (
    _CANONICAL_INT,
    _check_file,
    _check_nonempty,
    _read_table,
    _sniff_encoding,
    _Table,
    _to_int64,
    _with_source,
)
from dprec.errors import DataError

__all__ = ["ROLE_ALIASES", "Role", "load_csv"]

log = logging.getLogger(__name__)


_CONTROL = r"[\x00-\x08\x0a-\x1f\x7f]"  # C0 controls but tab, and DEL: never in an id


Role = Literal["user", "item", "rating", "timestamp"]
ROLE_ALIASES: dict[str, tuple[str, ...]] = {
    "user": ("user", "user_id", "userid", "uid", "users", "u"),
    "item": ("item", "item_id", "itemid", "iid", "movie", "movieid", "movie_id", "app",
             "app_id", "appid", "package", "items", "i"),
    "rating": ("rating", "ratings", "score", "value", "cnt", "count", "r", "weight"),
    "timestamp": ("timestamp", "time", "ts", "t", "datetime", "date"),
}
_ALIAS_TO_ROLE = {a: role for role, aliases in ROLE_ALIASES.items() for a in aliases}


_NUMBER = re.compile(r"-?\d+(\.\d*)?")
_HEADER_PROBE_LINES = 100
"""Lines after the first that header detection reads."""


def _names_over_numbers(p: Path, encoding: str, sep: str, fields: Sequence[str]) -> bool:
    """True if the first line reads as a header that names no known column: some column
    holds a non-number on the first line and a number on each of the next (up to
    :data:`_HEADER_PROBE_LINES`) lines, as ``customer,product`` over numeric ids does."""
    rows: list[list[str]] = []
    try:
        with p.open(encoding=encoding, errors="replace") as f:
            f.readline()
            for line in f:
                line = line.rstrip("\r\n")
                if line.strip():
                    rows.append(line.split() if sep == r"\s+" else line.split(sep))
                if len(rows) >= _HEADER_PROBE_LINES:
                    break
    except OSError as e:
        raise DataError(f"{p}: cannot read ({e.strerror or e})") from e
    if not rows:
        return False
    for k, field in enumerate(fields):
        if _NUMBER.fullmatch(_clean(field)):
            continue
        if all(len(r) > k and _NUMBER.fullmatch(_clean(r[k])) for r in rows):
            return True
    return False


def _accepted_names() -> str:
    """The header names load_csv recognises, role by role."""
    return "; ".join(f"{role}: {', '.join(aliases)}" for role, aliases in ROLE_ALIASES.items())


def _sniff_sep(first_line: str) -> str:
    for sep in ("\t", ",", ";", "|"):
        if sep in first_line:
            return sep
    return r"\s+"


def _clean(field: str) -> str:
    return field.strip().strip('"').strip()


def _base_name(field: str) -> str:
    return _clean(field).split(":", 1)[0].strip().lower()


def _column_of(role: str, given: str, fields: Sequence[str], header: bool, p: Path) -> int:
    """The index of the column ``given`` names (a header name or a 1-based position)."""
    if header:
        exact = [_clean(f) for f in fields]
        for key, candidates in ((given, exact), (given.lower(), [c.lower() for c in exact]),
                                (given.lower(), [_base_name(f) for f in fields])):
            if key in candidates:
                return candidates.index(key)
    if given.isdigit():
        k = int(given)
        if 1 <= k <= len(fields):
            return k - 1
        raise DataError(f"{p}: {role}={given}: the file has {len(fields)} columns (1.."
                        f"{len(fields)})")
    if header:
        raise DataError(f"{p}: {role}={given}: no such column; the header has "
                        f"{[_clean(f) for f in fields]}")
    raise DataError(f"{p}: {role}={given}: the file has no header; name columns by position "
                    f"(1..{len(fields)}), e.g. user=1&item=2")


def _csv_roles(p: Path, fields: list[str], header: bool, columns: Sequence[str | None] | None,
               names: Mapping[str, str | int | None] | None) -> list[str | None]:
    """The role of each column of the file."""
    if columns is not None:
        roles = [c.lower() if c else None for c in columns]
        if len(roles) > len(fields):
            raise DataError(f"{p}: columns names {len(roles)} columns, the file has "
                            f"{len(fields)}")
        roles += [None] * (len(fields) - len(roles))
        unknown = sorted({r for r in roles if r and r not in ROLE_ALIASES})
        if unknown:
            raise DataError(f"columns must name roles in {list(ROLE_ALIASES)}, got {unknown}")
        return roles
    names = dict(names or {})
    unknown = sorted(set(names) - set(ROLE_ALIASES))
    if unknown:
        raise DataError(f"column names are given for roles {unknown}; the roles are "
                        f"{list(ROLE_ALIASES)}")
    roles: list[str | None] = [None] * len(fields)
    for role, given in names.items():
        if given is None or str(given).strip() == "":
            continue
        k = _column_of(role, str(given).strip(), fields, header, p)
        if roles[k] is not None:
            raise DataError(f"{p}: {roles[k]}= and {role}= name the same column {given!r}")
        roles[k] = role
    if header:
        for k, b in enumerate(_base_name(f) for f in fields):
            role = _ALIAS_TO_ROLE.get(b)
            if roles[k] is None and role and role not in names and role not in roles:
                roles[k] = role
    elif not names:
        positional: dict[int, list[str | None]] = {
            2: ["user", "item"], 3: ["user", "item", "rating"],
            4: ["user", "item", "rating", "timestamp"],
        }
        if len(fields) not in positional:
            raise DataError(
                f"{p}: a headerless file needs 2 to 4 columns (user, item[, rating]"
                f"[, timestamp]), found {len(fields)}; name them (e.g. "
                "csv:PATH?user=1&item=2&rating=3, or columns=[...])"
            )
        roles = list(positional[len(fields)])
    return roles


def _csv_ids(table: _Table, role: str) -> np.ndarray:
    """Ids as int64 when every one is an integer written plainly that fits, else as text
    (so ``007`` and ``7`` stay two ids); never through a float. Text ids are Python strings
    in an object array: a fixed-width numpy string would give every row the width of the
    longest id (one 5,000-character id in a 1 MB file took 4 GB), and would drop trailing
    NULs (``4\\0`` read as ``4``). An id holding a control character is an error."""
    s = table.text(role).str.strip()
    empty = (s == "").to_numpy(dtype=bool, na_value=True)
    if empty.any():
        row = int(np.flatnonzero(empty)[0])
        raise DataError(f"{table.at(row, role)}: empty {role} id")
    control = s.str.contains(_CONTROL, regex=True).to_numpy(dtype=bool, na_value=False)
    if control.any():
        row = int(np.flatnonzero(control)[0])
        raise DataError(f"{table.at(row, role)}: {role} id {s.iloc[row][:40]!r} holds a "
                        "control character (NUL, ...): the file is corrupt or binary")
    if s.str.fullmatch(_CANONICAL_INT).all():
        try:
            return s.astype(np.int64).to_numpy()
        except (OverflowError, ValueError):
            log.info("%s: %s ids do not all fit in 64 bits; kept as text", table.path, role)
    return s.to_numpy(dtype=object)


def load_csv(
    path: str | Path,
    *,
    sep: str | None = None,
    header: bool | None = None,
    columns: Sequence[str | None] | None = None,
    names: Mapping[str, str | int | None] | None = None,
    threshold: float | None = None,
    name: str | None = None,
    rating_scale: tuple[float, float] | None = None,
) -> Dataset:
    """Interactions ``user,item[,rating][,timestamp]`` from a delimited text file.

    ``sep`` is sniffed from the first line (tab, comma, semicolon, pipe, else whitespace)
    unless given. ``header`` is detected when None: the first line is a header if one of its
    fields is a known column name (``user``, ``userId``, ``item``, ``app``, ``rating``,
    ``cnt``, ``timestamp``, RecBole ``name:type`` fields, ...) or a name in ``names``.
    ``names`` maps roles (``"user"``, ``"item"``, ``"rating"``, ``"timestamp"``) to a
    header name or a 1-based column position (None or "" drops that role); roles it leaves
    out are matched by known names. ``columns`` instead names the role of each column in
    file order (None to skip). Without either, a headerless file is read by position (2
    columns: user, item; 3: + rating; 4: + timestamp).

    Ids are stripped of surrounding blanks and read exactly: int64 if every id is a plain
    integer that fits, else text. Without a rating column every interaction is 1. Ratings
    must be > 0 unless ``threshold`` is given: then ratings > threshold become 1 and the
    others are dropped (their users and items are kept), recorded in the history as
    ``binarise(rating>T)``. Timestamps may be numbers or date strings (to Unix seconds).
    ``rating_scale`` declares the public (low, high) scale of explicit ratings, which every
    rating must lie in (local-DP rating systems need it); a file says nothing of its scale,
    so none is declared without it.

    The name is ``csv#`` and the first 16 hex digits of :meth:`Dataset.content_sha256`, so
    the same data at two paths give the same name, hence the same random streams; the
    history's ``source:`` line records the path.
    """
    p = Path(path).expanduser()
    _check_file(p)
    encoding = _sniff_encoding(p) or "utf-8"
    first = _first_line(p, encoding)
    sep = sep or _sniff_sep(first)
    fields = first.split() if sep == r"\s+" else first.split(sep)
    unnamed_header = False
    if header is None:
        header, unnamed_header = _detect_header(p, encoding, sep, fields, names)
    if columns is not None and names is not None:
        raise DataError("give load_csv either columns or names, not both")
    roles = _csv_roles(p, fields, header, columns, names)
    _check_required_roles(p, fields, roles, unnamed_header)
    t = _read_columns(p, sep, header, fields, roles)
    users, items = _csv_ids(t, "user"), _csv_ids(t, "item")
    ratings = _ratings(t) if "rating" in roles else None
    ts = _timestamps(t) if "timestamp" in roles else None
    if rating_scale is not None and (ratings is None or threshold is not None):
        why = "threshold is given" if ratings is not None else "it has no rating column"
        raise DataError(f"{p}: rating_min and rating_max declare the scale of explicit "
                        f"ratings, but the file is read as implicit feedback ({why}): drop them")
    if threshold is not None:
        return _binarised(p, threshold, users, items, ratings, ts, name)
    if ratings is not None:
        _check_positive(t, ratings)
    ds = Dataset.from_triples("csv", users, items, ratings, ts, rating_scale=rating_scale)
    return _named(ds, p, name)


def _binarised(p: Path, threshold: float, users: np.ndarray, items: np.ndarray,
               ratings: np.ndarray | None, ts: np.ndarray | None,
               name: str | None) -> Dataset:
    """The interactions rated above ``threshold`` as 1, every user and item kept (even one
    left with none), recorded in the history as ``binarise(rating>T)``."""
    if ratings is None:
        raise DataError(f"{p}: threshold={threshold} needs a rating column")
    if not np.isfinite(threshold):
        raise DataError(f"threshold must be a finite number, got {threshold}")
    keep_rows = ratings > threshold
    ds = Dataset.from_triples("csv", users[keep_rows], items[keep_rows], None,
                              None if ts is None else ts[keep_rows],
                              all_user_ids=np.unique(users), all_item_ids=np.unique(items),
                              rating_scale=None)
    return _named(ds, p, name).with_history(f"binarise(rating>{threshold:g})")


def _named(ds: Dataset, p: Path, name: str | None) -> Dataset:
    """``ds`` named ``name``, or ``csv#`` and the first 16 hex digits of its content hash,
    with its source ``p`` in the history."""
    ds = replace(ds, name=name or f"csv#{ds.content_sha256()[:16]}")
    return _with_source(ds, p, "file")


def _first_line(p: Path, encoding: str) -> str:
    """The file's first line, without its line end; DataError if it is blank."""
    try:
        with p.open(encoding=encoding, errors="replace") as f:
            first = f.readline().rstrip("\r\n")
    except OSError as e:
        raise DataError(f"{p}: cannot read ({e.strerror or e})") from e
    if not first.strip():
        raise DataError(f"{p}: file is empty or starts with a blank line")
    return first


def _detect_header(p: Path, encoding: str, sep: str, fields: Sequence[str],
                   names: Mapping[str, str | int | None] | None) -> tuple[bool, bool]:
    """(whether the first line is a header, whether it is one that names no known column):
    a header if a field is a known column name or a name in ``names`` and not every field
    is a number, else if it reads as names over numbers (:func:`_names_over_numbers`)."""
    given = {str(v).strip() for v in (names or {}).values() if v is not None}
    header = (any(b in _ALIAS_TO_ROLE for b in map(_base_name, fields))
              or bool(given & {_clean(f) for f in fields})) and not all(
        _NUMBER.fullmatch(f.strip()) for f in fields)
    if not header and _names_over_numbers(p, encoding, sep, fields):
        return True, True
    return header, False


def _check_required_roles(p: Path, fields: Sequence[str], roles: Sequence[str | None],
                          unnamed_header: bool) -> None:
    """DataError, saying how to name it, if no column is the user's or the item's."""
    for required in ("user", "item"):
        if required not in roles and unnamed_header:
            raise DataError(
                f"{p}: the first line {[_clean(f) for f in fields]} is a header (the lines "
                f"below it hold numbers where it holds names) with no {required} column. "
                f"Accepted names: {_accepted_names()}. Rename the columns, name them "
                f"(e.g. csv:{p}?user=COLUMN&item=COLUMN), or give header=no if the first "
                "line is an interaction")
        if required not in roles:
            raise DataError(f"{p}: no {required} column found in {fields!r}; name it, e.g. "
                            f"csv:{p}?{required}=COLUMN (or columns=[...])")


def _read_columns(p: Path, sep: str, header: bool, fields: Sequence[str],
                  roles: Sequence[str | None]) -> _Table:
    """The columns that have a role, as text, labelled by their role; DataError if the file
    holds no interaction or a row has more fields than the first line."""
    keep = [k for k, r in enumerate(roles) if r]
    # every column is read (no usecols): the parser then refuses a row with more fields
    # than the first line, which usecols would silently cut
    df = _read_table(p, sep=sep, header=None, skiprows=int(header),
                     names=list(range(len(fields))), dtype=str, keep_default_na=False,
                     engine="python" if sep == r"\s+" else "c")
    df = df[keep]
    df.columns = [roles[k] for k in keep]
    labels = {roles[k]: repr(_clean(fields[k])) if header else str(k + 1) for k in keep}
    t = _Table(p, df, int(header), labels=labels)
    _check_nonempty(len(t), p)
    return t


def _check_positive(table: _Table, ratings: np.ndarray) -> None:
    """DataError naming the first rating that is not > 0 as float32 stores it (a stored
    rating counts as an interaction, so a 0 or negative one would be read as positive)."""
    if ratings.astype(np.float32).min() > 0:
        return
    row = int(np.flatnonzero(ratings.astype(np.float32) <= 0)[0])  # 1e-50 stores as 0
    raise DataError(
        f"{table.at(row, 'rating')}: rating {table.text('rating').iloc[row].strip()} is not "
        "> 0; every stored rating counts as an interaction, so a 0 or negative one would be "
        "read as a positive; binarise explicitly by adding threshold=T to the dataset's "
        f"options (e.g. csv:{table.path}?threshold=0 keeps ratings > 0 as 1), ignore the "
        "ratings with rating= (empty), or fix the file"
    )


def _ratings(table: _Table) -> np.ndarray:
    """The rating column as finite numbers that float32 (how a Dataset stores ratings) holds;
    DataError naming the first line whose rating does not fit (e.g. 1e308)."""
    ratings = table.numbers("rating")
    limit = float(np.finfo(np.float32).max)
    bad = np.abs(ratings) > limit
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise DataError(f"{table.at(row, 'rating')}: rating "
                        f"{table.text('rating').iloc[row].strip()} does not fit in a 32-bit "
                        f"float (at most {limit:.4g}), how ratings are stored")
    return ratings


def _timestamps(table: _Table) -> np.ndarray:
    """Integer seconds read exactly, other numbers floored, else dates to Unix seconds."""
    values = table.text("timestamp").str.strip()
    if values.str.fullmatch(_CANONICAL_INT).all():
        return _to_int64(values, table, "timestamp")
    num = pd.to_numeric(values, errors="coerce")
    if not num.isna().any():
        v = num.to_numpy(np.float64)
        bad = ~(np.abs(v) < 2.0**62)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise DataError(f"{table.at(row, 'timestamp')}: timestamp {values.iloc[row]} is "
                            "out of range")
        return np.floor(v).astype(np.int64)
    dates = pd.to_datetime(values, errors="coerce", utc=True)
    bad = dates.isna().to_numpy()
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise DataError(f"{table.at(row, 'timestamp')}: timestamp must be a number or a "
                        f"date, got {values.iloc[row]!r}")
    epoch = pd.Timestamp("1970-01-01", tz="UTC")
    return ((dates - epoch) // pd.Timedelta(seconds=1)).to_numpy(np.int64)
