"""Loaders for MovieLens (100K, 1M, 10M, 20M/25M), Frappe and generic CSV interaction files.

Every loader reads a local path with pandas and returns a :class:`Dataset` with ratings,
timestamps (where the format has them), raw ids in ``user_ids``/``item_ids``, side features
indexed by raw id, and a history that starts with ``source: ...`` naming what was read. A
missing or corrupt file raises :class:`DataError` naming the file, the line and the value.

Reading rules, the same for every loader:
- ids are read exactly, never through a float: int64 when every id is an integer that fits,
  else (generic CSV only) the text itself. A MovieLens id that is not an integer or does
  not fit in 64 bits is an error.
- a stored rating is an interaction, so ratings must be > 0. MovieLens ratings must lie on
  the release's scale (1..5 stars for 100K and 1M, half stars 0.5..5 for 10M/20M/25M);
  a generic CSV's ratings <= 0 are an error unless ``threshold`` binarises them explicitly
  (the history records ``binarise(rating>T)``).
- text is UTF-8 (a byte-order mark is skipped; UTF-16 with a mark is read too), falling
  back to latin-1; compressed or binary files are refused with a hint.
- a file loaded under the name of an official release (:data:`RELEASES`) must hold the
  release's number of ratings, with timestamps inside the release's time span: this
  catches a file cut at a line boundary or in the middle of a number.

Side-feature conventions (the same for every MovieLens format):
- ``item_features``: ``title`` (str), ``year`` (nullable Int64), ``genres`` (str, genre
  names joined by ``|``; multi-hot via ``item_features["genres"].str.get_dummies("|")``).
- ``user_features``: ``age``, ``gender``, ``occupation``, ``zip_code`` as the source gives
  them (ML-1M keeps its age-bucket and occupation codes).

Frappe (:func:`load_frappe`) has context columns per usage record; its ``user_features`` are
each user's most frequent context and its ``item_features`` each app's ``cost`` (and
``category`` from ``meta.csv``). :func:`dprec.data.features.side_features` encodes all of
these for models.
"""

from __future__ import annotations

import codecs
import csv
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from dprec.data.dataset import Dataset
from dprec.errors import DataError

__all__ = [
    "ATOMIC_FILES", "FRAPPE_COLUMNS", "FRAPPE_CONTEXT", "GROUPLENS_FILES", "HALF_STAR_SCALE",
    "Layout", "ML100K_GENRES", "RELEASES", "ROLE_ALIASES", "Release", "Role", "STAR_SCALE",
    "find_ml100k", "load_csv", "load_frappe", "load_ml100k", "load_ml10m", "load_ml1m",
    "load_movielens_csv", "ml100k_layout",
]

log = logging.getLogger(__name__)

ML100K_GENRES = (
    "unknown", "Action", "Adventure", "Animation", "Children's", "Comedy", "Crime",
    "Documentary", "Drama", "Fantasy", "Film-Noir", "Horror", "Musical", "Mystery",
    "Romance", "Sci-Fi", "Thriller", "War", "Western",
)
GROUPLENS_FILES = ("u.data", "u.user", "u.item")
ATOMIC_FILES = ("ml-100k.inter", "ml-100k.user", "ml-100k.item")

Layout = Literal["grouplens", "atomic"]

_YEAR_IN_TITLE = re.compile(r"\((\d{4})\)\s*$")
_INTEGER_TEXT = r"[+-]?\d+(?:\.0*)?"  # an integer, possibly written 12.0
_CANONICAL_INT = r"-?(?:0|[1-9]\d*)"  # an integer written the one way int() prints it
_CONTROL = r"[\x00-\x08\x0a-\x1f\x7f]"  # C0 controls but tab, and DEL: never in an id
_STARS = np.arange(1.0, 6.0)
_HALF_STARS = np.arange(1.0, 11.0) / 2
STAR_SCALE = (1.0, 5.0)
"""The declared rating scale of ML-100K and ML-1M (whole stars)."""
HALF_STAR_SCALE = (0.5, 5.0)
"""The declared rating scale of ML-10M, ML-20M and ML-25M (half stars)."""
_MAGIC = (
    (b"\x1f\x8b", "gzip", "gunzip"), (b"PK\x03\x04", "zip", "unzip"),
    (b"\xfd7zXZ\x00", "xz", "unxz"), (b"\x28\xb5\x2f\xfd", "zstd", "unzstd"),
)


@dataclass(frozen=True)
class Release:
    """What a complete, unmodified copy of an official MovieLens release holds."""

    title: str
    ratings: int
    first_day: str
    """ISO date (UTC) on or after which every rating lies."""
    last_day: str
    """ISO date (UTC) on or before which every rating lies."""


RELEASES: dict[str, Release] = {
    "ml-100k": Release("MovieLens-100K", 100_000, "1997-09-19", "1998-04-23"),
    "ml-1m": Release("MovieLens-1M", 1_000_209, "2000-01-01", "2003-12-31"),
    "ml-10m": Release("MovieLens-10M", 10_000_054, "1995-01-01", "2009-12-31"),
    "ml-20m": Release("MovieLens-20M", 20_000_263, "1995-01-01", "2016-12-31"),
    "ml-25m": Release("MovieLens-25M", 25_000_095, "1995-01-01", "2019-12-31"),
}
"""Known releases by dataset name; a loader checks the file it reads under one of these
names against it (tests replace entries to check small fixtures)."""


# --------------------------------------------------------------------------- helpers


def _sniff_encoding(path: Path) -> str | None:
    """The encoding a byte-order mark announces, if any; DataError for binary files."""
    try:
        with path.open("rb") as f:
            head = f.read(4096)
    except OSError as e:
        raise DataError(f"{path}: cannot read ({e.strerror or e})") from e
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    for magic, kind, tool in _MAGIC:
        if head.startswith(magic):
            raise DataError(f"{path}: this is a {kind} archive, not a text file; extract it "
                            f"first (e.g. `{tool} {path}`) and load the extracted file")
    if b"\x00" in head:
        raise DataError(f"{path}: this is a binary file, not delimited text")
    return None


def _check_file(path: Path) -> None:
    if path.is_dir():
        raise DataError(f"{path}: is a folder; expected a file")
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    if path.stat().st_size == 0:
        raise DataError(f"{path}: file is empty")


def _read_table(path: Path, **kwargs: object) -> pd.DataFrame:
    """``pd.read_csv`` that turns every failure into a DataError naming ``path``.

    Text is decoded as the byte-order mark says, else UTF-8, falling back to latin-1 (older
    MovieLens files) or to the ``encoding`` given.
    """
    _check_file(path)
    marked = _sniff_encoding(path)
    encoding = kwargs.pop("encoding", None)
    encodings = (marked,) if marked else (encoding,) if encoding else ("utf-8", "latin-1")
    last: Exception | None = None
    for enc in encodings:
        try:
            return pd.read_csv(path, encoding=enc, **kwargs)  # type: ignore[call-overload]
        except UnicodeError as e:
            last = e
        except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError,
                OverflowError) as e:
            raise DataError(f"{path}: cannot parse ({str(e).strip()})") from e
        except OSError as e:
            raise DataError(f"{path}: cannot read ({e.strerror or e})") from e
    raise DataError(f"{path}: cannot decode text ({last}); save it as UTF-8")


class _Table:
    """A parsed file that can re-read itself as text: ids are converted from the text
    (exactly), and errors name the file, the line and the column as the file has it."""

    def __init__(self, path: Path, df: pd.DataFrame, header_lines: int = 0,
                 reread: Callable[[], pd.DataFrame] | None = None,
                 labels: Mapping[object, str] | None = None) -> None:
        self.path, self.df, self.header_lines = path, df, header_lines
        self._reread, self._text = reread, None
        self.labels = dict(labels or {})

    def __len__(self) -> int:
        return len(self.df)

    def at(self, row: int, column: object) -> str:
        """``PATH: line N: column C`` for error messages."""
        label = self.labels.get(column, repr(column))
        return f"{self.path}: line {row + 1 + self.header_lines}: column {label}"

    def text(self, column: object) -> pd.Series:
        """Column ``column`` as the text the file holds."""
        col = self.df[column]
        if not pd.api.types.is_numeric_dtype(col.dtype):
            return col.fillna("").astype(str)
        if self._reread is None:
            return col.astype(str)
        if self._text is None:
            self._text = self._reread()
        return self._text[column].fillna("").astype(str)

    def ids(self, column: object, what: str = "an integer id") -> np.ndarray:
        """Integer ids as int64, read exactly; DataError for a non-integer or one too big."""
        col = self.df[column]
        if col.dtype == np.int64:
            return col.to_numpy()
        s = self.text(column).str.strip()
        ok = s.str.fullmatch(_INTEGER_TEXT).to_numpy(dtype=bool, na_value=False)
        if not ok.all():
            row = int(np.flatnonzero(~ok)[0])
            raise DataError(f"{self.at(row, column)} must be {what}, got "
                            f"{self.text(column).iloc[row]!r} (truncated or corrupt file?)")
        return _to_int64(s.str.replace(r"\.0*$", "", regex=True), self, column)

    def numbers(self, column: object) -> np.ndarray:
        """Column ``column`` as finite float64; DataError naming the first bad line."""
        col = self.df[column]
        if pd.api.types.is_numeric_dtype(col.dtype) and not pd.api.types.is_bool_dtype(
                col.dtype):
            values = col.to_numpy(np.float64)
        else:
            values = pd.to_numeric(col, errors="coerce").to_numpy(np.float64)
        bad = ~np.isfinite(values)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise DataError(f"{self.at(row, column)} must be a finite number, got "
                            f"{self.text(column).iloc[row]!r} (truncated or corrupt file?)")
        return values


def _to_int64(digits: pd.Series, table: _Table, column: object) -> np.ndarray:
    """Integer text to int64 exactly; DataError naming the first value that does not fit."""
    try:
        return digits.astype(np.int64).to_numpy()
    except (OverflowError, ValueError):
        long = np.flatnonzero(digits.str.len().to_numpy() >= 19)
        row = next((int(k) for k in long if not -2**63 <= int(digits.iloc[k]) < 2**63),
                   int(long[0]) if len(long) else 0)
        raise DataError(f"{table.at(row, column)}: {digits.iloc[row]} does not fit in a "
                        "64-bit integer") from None


def _numeric_table(path: Path, header_lines: int = 0,
                   rename: Callable[[pd.DataFrame], pd.DataFrame] | None = None,
                   **kwargs: object) -> _Table:
    """A table parsed with inferred (fast) dtypes that re-reads itself as text on demand."""
    def read(**extra: object) -> pd.DataFrame:
        df = _read_table(path, **kwargs, **extra)
        return rename(df) if rename else df

    return _Table(path, read(), header_lines,
                  reread=lambda: read(dtype=str, keep_default_na=False))


def _year_from_title(titles: pd.Series) -> pd.Series:
    return pd.to_numeric(titles.str.extract(_YEAR_IN_TITLE, expand=False),
                         errors="coerce").astype("Int64")


def _resolve_dir(path: str | Path, marker: str, subdirs: Sequence[str]) -> Path:
    """The folder holding ``marker``: ``path`` itself, ``path``'s parent (a file was given),
    or one of ``subdirs`` below ``path``."""
    p = Path(path).expanduser()
    if p.is_file():
        return p.parent
    if (p / marker).is_file():
        return p
    for sub in subdirs:
        if (p / sub / marker).is_file():
            return p / sub
    if not p.exists():
        raise DataError(f"{p}: no such file or directory")
    raise DataError(f"{p}: no {marker} found here or in {', '.join(subdirs) or 'any subfolder'}")


def _split_dat(path: Path, n_fields: int, names: Sequence[str]) -> _Table:
    """Read a small ``::``-separated file (users.dat, movies.dat) into string columns."""
    df = _read_table(path, sep="\x1f", header=None, names=["line"], dtype=str,
                     quoting=csv.QUOTE_NONE, skip_blank_lines=True, keep_default_na=False,
                     encoding="latin-1")
    parts = df["line"].str.split("::", n=n_fields - 1, expand=True)
    if parts.shape[1] != n_fields or parts.isna().any().any():
        bad = int(np.flatnonzero(parts.isna().any(axis=1).to_numpy())[0]) \
            if parts.shape[1] == n_fields else 0
        raise DataError(
            f"{path}: line {bad + 1}: expected {n_fields} '::'-separated fields "
            f"({'::'.join(names)}), got {df['line'].iloc[bad]!r}"
        )
    parts.columns = list(names)
    return _Table(path, parts)


def _read_dat_ratings(path: Path) -> tuple[_Table, np.ndarray, np.ndarray, np.ndarray,
                                           np.ndarray]:
    """``UserID::MovieID::Rating::Timestamp`` lines (ML-1M, ML-10M), parsed by the C engine.

    Splitting on ``:`` gives seven fields with empty ones in between; those are checked so
    that a file with single ``:`` separators is rejected rather than misread.
    """
    t = _numeric_table(path, sep=":", header=None, quoting=csv.QUOTE_NONE,
                       names=list(range(7)), encoding="latin-1")
    df = t.df
    _check_nonempty(len(df), path)
    if not df[[1, 3, 5]].isna().all().all() or df[6].isna().any():
        bad = ~(df[[1, 3, 5]].isna().all(axis=1) & df[6].notna())
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataError(
            f"{path}: line {row + 1}: expected UserID::MovieID::Rating::Timestamp "
            "(four '::'-separated numbers)"
        )
    return t, t.ids(0), t.ids(2), t.numbers(4), t.ids(6, "an integer timestamp")


def _movies_features(movies: _Table, id_col: str) -> pd.DataFrame:
    ids = movies.ids(id_col)
    titles = movies.df["title"].astype(str).str.strip()
    genres = movies.df["genres"].fillna("").astype(str).str.strip()
    return pd.DataFrame(
        {"title": titles.to_numpy(), "year": _year_from_title(titles).array,
         "genres": genres.to_numpy()},
        index=pd.Index(ids, name="item_id"),
    )


def _check_nonempty(n: int, path: Path) -> None:
    if n == 0:
        raise DataError(f"{path}: no interactions found")


def _check_scale(table: _Table, column: object, ratings: np.ndarray, scale: np.ndarray,
                 title: str) -> None:
    """Every rating on the release's scale (MovieLens ratings are explicit stars)."""
    bad = ~np.isin(ratings, scale)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        stars = "half stars 0.5..5" if scale[0] == 0.5 else "whole stars 1..5"
        raise DataError(f"{table.at(row, column)}: rating {ratings[row]:g} is outside "
                        f"{title}'s scale ({stars}); the file is corrupt or not {title}")


def _check_release(name: str, table: _Table, ts: np.ndarray | None, ts_column: object,
                   ) -> None:
    """For a file loaded as an official release: its rating count and time span."""
    rel = RELEASES.get(name)
    if rel is None:
        return
    advice = ("the file looks truncated or corrupt; extract it again from the GroupLens "
              "archive")
    if len(table) != rel.ratings:
        raise DataError(f"{table.path}: {rel.title} has {rel.ratings:,} ratings, found "
                        f"{len(table):,}: {advice}")
    if ts is None:
        return
    lo = int(pd.Timestamp(rel.first_day, tz="UTC").timestamp())
    hi = int(pd.Timestamp(rel.last_day, tz="UTC").timestamp()) + 86_400
    bad = (ts < lo) | (ts >= hi)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise DataError(f"{table.at(row, ts_column)}: timestamp {ts[row]} lies outside "
                        f"{rel.title}'s span ({rel.first_day} to {rel.last_day}): {advice}")


def _with_source(ds: Dataset, path: Path, source: str | None) -> Dataset:
    where = path.expanduser().resolve()
    return ds.with_history(f"source: {source} {where}" if source else f"source: {where}")


# --------------------------------------------------------------------------- MovieLens 100K


def ml100k_layout(path: str | Path) -> Layout | None:
    """Which ML-100K layout the folder ``path`` holds, if complete: ``"grouplens"``
    (u.data/u.user/u.item) or ``"atomic"`` (RecBole's ml-100k.inter/.user/.item)."""
    p = Path(path)
    if all((p / f).is_file() for f in GROUPLENS_FILES):
        return "grouplens"
    if all((p / f).is_file() for f in ATOMIC_FILES):
        return "atomic"
    return None


def find_ml100k(path: str | Path) -> Path | None:
    """The folder at or directly below ``path`` (``path/ml-100k``) holding ML-100K."""
    p = Path(path).expanduser()
    for candidate in (p, p / "ml-100k"):
        if candidate.is_dir() and ml100k_layout(candidate) is not None:
            return candidate
    return None


def load_ml100k(path: str | Path, *, source: str | None = None) -> Dataset:
    """MovieLens-100K from ``path`` in either the GroupLens layout (``u.data`` tab-separated
    ``user item rating timestamp``; ``u.user`` ``id|age|gender|occupation|zip``; ``u.item``
    ``id|title|date|video|url|19 genre flags``, latin-1) or RecBole's atomic files
    (``ml-100k.inter/.user/.item``, tab-separated with a typed header). ``source`` labels
    the history's ``source:`` line (e.g. ``"cache"``)."""
    folder = find_ml100k(path)
    if folder is None:
        raise DataError(
            f"{path}: no MovieLens-100K here: expected {'/'.join(GROUPLENS_FILES)} or "
            f"{'/'.join(ATOMIC_FILES)} in this folder or in its ml-100k subfolder"
        )
    if ml100k_layout(folder) == "grouplens":
        ds = _load_ml100k_grouplens(folder)
    else:
        ds = _load_ml100k_atomic(folder)
    return _with_source(ds, folder, source)


def _load_ml100k_grouplens(folder: Path) -> Dataset:
    data_path = folder / "u.data"
    t = _numeric_table(data_path, sep="\t", header=None,
                       names=["user", "item", "rating", "ts"], quoting=csv.QUOTE_NONE)
    _check_nonempty(len(t), data_path)
    users, items = t.ids("user"), t.ids("item")
    ratings, ts = t.numbers("rating"), t.ids("ts", "an integer timestamp")
    _check_scale(t, "rating", ratings, _STARS, "MovieLens-100K")
    _check_release("ml-100k", t, ts, "ts")

    user_path = folder / "u.user"
    uf = _Table(user_path, _read_table(
        user_path, sep="|", header=None,
        names=["user_id", "age", "gender", "occupation", "zip_code"],
        dtype=str, quoting=csv.QUOTE_NONE, keep_default_na=False))
    user_features = pd.DataFrame(
        {"age": uf.ids("age", "an integer"), "gender": uf.df["gender"].to_numpy(),
         "occupation": uf.df["occupation"].to_numpy(), "zip_code": uf.df["zip_code"].to_numpy()},
        index=pd.Index(uf.ids("user_id"), name="user_id"),
    )

    item_path = folder / "u.item"
    genre_names = _ml100k_genres(folder / "u.genre")
    cols = ["item_id", "title", "date", "video_date", "url", *genre_names]
    it = _Table(item_path, _read_table(
        item_path, sep="|", header=None, names=cols, dtype=str, quoting=csv.QUOTE_NONE,
        encoding="latin-1", keep_default_na=False))
    flags = np.column_stack([it.numbers(g) for g in genre_names]) > 0
    names = np.asarray(genre_names, dtype=object)
    genres = ["|".join(names[row]) for row in flags]
    year = pd.to_datetime(it.df["date"], format="%d-%b-%Y", errors="coerce").dt.year
    item_features = pd.DataFrame(
        {"title": it.df["title"].str.strip().to_numpy(), "year": year.astype("Int64").array,
         "genres": genres},
        index=pd.Index(it.ids("item_id"), name="item_id"),
    )
    return Dataset.from_triples("ml-100k", users, items, ratings, ts,
                                user_features=user_features, item_features=item_features,
                                rating_scale=STAR_SCALE if ratings is not None else None)


def _ml100k_genres(path: Path) -> tuple[str, ...]:
    """Genre names from ``u.genre`` (``name|index``) if present, else the published list."""
    if not path.is_file():
        return ML100K_GENRES
    df = _read_table(path, sep="|", header=None, names=["name", "index"], dtype=str,
                     quoting=csv.QUOTE_NONE, keep_default_na=False).dropna()
    g = _Table(path, df[df["name"] != ""])
    order = g.ids("index", "an integer")
    names = tuple(g.df["name"].to_numpy()[np.argsort(order)])
    if len(names) != len(ML100K_GENRES):
        raise DataError(f"{path}: expected {len(ML100K_GENRES)} genres, got {len(names)}")
    return names


def _plain_names(df: pd.DataFrame) -> pd.DataFrame:
    """RecBole's typed header (``name:type``) reduced to plain names."""
    df.columns = [str(c).split(":", 1)[0] for c in df.columns]
    return df


def _read_atomic(path: Path, *, as_text: bool = True) -> _Table:
    """A RecBole atomic file (all columns as text unless ``as_text`` is False)."""
    kwargs: dict[str, object] = {"sep": "\t", "header": 0, "quoting": csv.QUOTE_NONE}
    if not as_text:
        return _numeric_table(path, header_lines=1, rename=_plain_names, **kwargs)
    df = _read_table(path, dtype=str, keep_default_na=False, **kwargs)
    return _Table(path, _plain_names(df), 1)


def _require(df: pd.DataFrame, columns: Sequence[str], path: Path) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise DataError(f"{path}: missing column(s) {missing}; header has {list(df.columns)}")


def _load_ml100k_atomic(folder: Path) -> Dataset:
    inter_path = folder / "ml-100k.inter"
    t = _read_atomic(inter_path, as_text=False)
    _require(t.df, ["user_id", "item_id"], inter_path)
    _check_nonempty(len(t), inter_path)
    users, items = t.ids("user_id"), t.ids("item_id")
    ratings = ts = None
    if "rating" in t.df:
        ratings = t.numbers("rating")
        _check_scale(t, "rating", ratings, _STARS, "MovieLens-100K")
    if "timestamp" in t.df:
        ts = t.ids("timestamp", "an integer timestamp")
    _check_release("ml-100k", t, ts, "timestamp")

    user_path = folder / "ml-100k.user"
    uf = _read_atomic(user_path)
    _require(uf.df, ["user_id", "age", "gender", "occupation", "zip_code"], user_path)
    user_features = pd.DataFrame(
        {"age": uf.ids("age", "an integer"), "gender": uf.df["gender"].to_numpy(),
         "occupation": uf.df["occupation"].to_numpy(), "zip_code": uf.df["zip_code"].to_numpy()},
        index=pd.Index(uf.ids("user_id"), name="user_id"),
    )

    item_path = folder / "ml-100k.item"
    it = _read_atomic(item_path)
    _require(it.df, ["item_id", "movie_title", "release_year", "class"], item_path)
    item_features = pd.DataFrame(
        {"title": it.df["movie_title"].str.strip().to_numpy(),
         "year": pd.to_numeric(it.df["release_year"], errors="coerce").astype("Int64").array,
         "genres": it.df["class"].str.split().str.join("|").to_numpy()},
        index=pd.Index(it.ids("item_id"), name="item_id"),
    )
    return Dataset.from_triples("ml-100k", users, items, ratings, ts,
                                user_features=user_features, item_features=item_features,
                                rating_scale=STAR_SCALE if ratings is not None else None)


# --------------------------------------------------------------------------- ML-1M, ML-10M


def load_ml1m(path: str | Path, *, source: str | None = None) -> Dataset:
    """MovieLens-1M: ``ratings.dat`` (``UserID::MovieID::Rating::Timestamp``), ``users.dat``
    (``UserID::Gender::Age::Occupation::Zip-code``) and ``movies.dat``
    (``MovieID::Title::Genres``, genres ``|``-separated), latin-1 encoded."""
    folder = _resolve_dir(path, "ratings.dat", ("ml-1m",))
    t, users, items, ratings, ts = _read_dat_ratings(folder / "ratings.dat")
    _check_scale(t, 4, ratings, _STARS, "MovieLens-1M")
    _check_release("ml-1m", t, ts, 6)
    user_features = None
    user_path = folder / "users.dat"
    if user_path.is_file():
        uf = _split_dat(user_path, 5, ["user_id", "gender", "age", "occupation", "zip_code"])
        user_features = pd.DataFrame(
            {"age": uf.ids("age", "an integer"), "gender": uf.df["gender"].to_numpy(),
             "occupation": uf.ids("occupation", "an integer code"),
             "zip_code": uf.df["zip_code"].to_numpy()},
            index=pd.Index(uf.ids("user_id"), name="user_id"),
        )
    else:
        log.warning("%s not found: loading ML-1M without user features", user_path)
    item_features = _dat_movies(folder / "movies.dat")
    ds = Dataset.from_triples("ml-1m", users, items, ratings, ts,
                              user_features=user_features, item_features=item_features,
                              rating_scale=STAR_SCALE)
    return _with_source(ds, folder, source)


def load_ml10m(path: str | Path, *, source: str | None = None) -> Dataset:
    """MovieLens-10M (folder ``ml-10M100K``): ``ratings.dat`` as ML-1M (half-star ratings)
    and ``movies.dat`` (``MovieID::Title::Genres``); there is no user file."""
    folder = _resolve_dir(path, "ratings.dat", ("ml-10M100K", "ml-10m"))
    t, users, items, ratings, ts = _read_dat_ratings(folder / "ratings.dat")
    _check_scale(t, 4, ratings, _HALF_STARS, "MovieLens-10M")
    _check_release("ml-10m", t, ts, 6)
    item_features = _dat_movies(folder / "movies.dat")
    ds = Dataset.from_triples("ml-10m", users, items, ratings, ts, item_features=item_features,
                              rating_scale=HALF_STAR_SCALE)
    return _with_source(ds, folder, source)


def _dat_movies(path: Path) -> pd.DataFrame | None:
    if not path.is_file():
        log.warning("%s not found: loading without item features", path)
        return None
    return _movies_features(_split_dat(path, 3, ["item_id", "title", "genres"]), "item_id")


# --------------------------------------------------------------------------- ML-20M, ML-25M


def load_movielens_csv(path: str | Path, *, name: str | None = None,
                       source: str | None = None) -> Dataset:
    """MovieLens-20M/25M (and the other CSV releases): ``ratings.csv`` with header
    ``userId,movieId,rating,timestamp`` (half-star ratings) and, if present, ``movies.csv``
    (``movieId,title,genres``). ``name`` defaults to the folder name (e.g. ``ml-25m``); a
    name in :data:`RELEASES` turns on that release's checks."""
    folder = _resolve_dir(path, "ratings.csv", ("ml-20m", "ml-25m"))
    name = name or folder.name.lower()
    rpath = folder / "ratings.csv"
    t = _numeric_table(rpath, header_lines=1, sep=",", header=0)
    _require(t.df, ["userId", "movieId", "rating", "timestamp"], rpath)
    _check_nonempty(len(t), rpath)
    users, items = t.ids("userId"), t.ids("movieId")
    ratings, ts = t.numbers("rating"), t.ids("timestamp", "an integer timestamp")
    title = RELEASES[name].title if name in RELEASES else "a MovieLens CSV release"
    _check_scale(t, "rating", ratings, _HALF_STARS, title)
    _check_release(name, t, ts, "timestamp")
    del t
    item_features = None
    mpath = folder / "movies.csv"
    if mpath.is_file():
        movies = _read_table(mpath, sep=",", header=0, dtype=str, keep_default_na=False)
        _require(movies, ["movieId", "title", "genres"], mpath)
        item_features = _movies_features(_Table(mpath, movies, 1), "movieId")
    else:
        log.warning("%s not found: loading without item features", mpath)
    ds = Dataset.from_triples(name, users, items, ratings, ts, item_features=item_features,
                              rating_scale=HALF_STAR_SCALE)
    return _with_source(ds, folder, source)


# --------------------------------------------------------------------------- Frappe

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


# --------------------------------------------------------------------------- generic CSV

Role = Literal["user", "item", "rating", "timestamp"]
ROLE_ALIASES: dict[str, tuple[str, ...]] = {
    "user": ("user", "user_id", "userid", "uid", "users", "u"),
    "item": ("item", "item_id", "itemid", "iid", "movie", "movieid", "movie_id", "app",
             "app_id", "appid", "package", "items", "i"),
    "rating": ("rating", "ratings", "score", "value", "cnt", "count", "r", "weight"),
    "timestamp": ("timestamp", "time", "ts", "t", "datetime", "date"),
}
_ALIAS_TO_ROLE = {a: role for role, aliases in ROLE_ALIASES.items() for a in aliases}


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
    try:
        with p.open(encoding=encoding, errors="replace") as f:
            first = f.readline().rstrip("\r\n")
    except OSError as e:
        raise DataError(f"{p}: cannot read ({e.strerror or e})") from e
    if not first.strip():
        raise DataError(f"{p}: file is empty or starts with a blank line")
    sep = sep or _sniff_sep(first)
    fields = first.split() if sep == r"\s+" else first.split(sep)
    if header is None:
        given = {str(v).strip() for v in (names or {}).values() if v is not None}
        header = (any(b in _ALIAS_TO_ROLE for b in map(_base_name, fields))
                  or bool(given & {_clean(f) for f in fields})) and not all(
            re.fullmatch(r"-?\d+(\.\d*)?", f.strip()) for f in fields)
    if columns is not None and names is not None:
        raise DataError("give load_csv either columns or names, not both")
    header_lines = int(header)
    roles = _csv_roles(p, fields, header, columns, names)
    for required in ("user", "item"):
        if required not in roles:
            raise DataError(f"{p}: no {required} column found in {fields!r}; name it, e.g. "
                            f"csv:{p}?{required}=COLUMN (or columns=[...])")

    keep = [k for k, r in enumerate(roles) if r]
    # every column is read (no usecols): the parser then refuses a row with more fields
    # than the first line, which usecols would silently cut
    df = _read_table(p, sep=sep, header=None, skiprows=header_lines,
                     names=list(range(len(fields))), dtype=str, keep_default_na=False,
                     engine="python" if sep == r"\s+" else "c")
    df = df[keep]
    df.columns = [roles[k] for k in keep]
    labels = {roles[k]: repr(_clean(fields[k])) if header else str(k + 1) for k in keep}
    t = _Table(p, df, header_lines, labels=labels)
    _check_nonempty(len(t), p)
    users, items = _csv_ids(t, "user"), _csv_ids(t, "item")
    ratings = _ratings(t) if "rating" in df.columns else None
    ts = _timestamps(t) if "timestamp" in df.columns else None
    if rating_scale is not None and (ratings is None or threshold is not None):
        why = "threshold is given" if ratings is not None else "it has no rating column"
        raise DataError(f"{p}: rating_min and rating_max declare the scale of explicit "
                        f"ratings, but the file is read as implicit feedback ({why}): drop them")
    steps: list[str] = []
    all_users = all_items = None
    if threshold is not None:
        if ratings is None:
            raise DataError(f"{p}: threshold={threshold} needs a rating column")
        if not np.isfinite(threshold):
            raise DataError(f"threshold must be a finite number, got {threshold}")
        keep_rows = ratings > threshold
        all_users, all_items = np.unique(users), np.unique(items)
        users, items = users[keep_rows], items[keep_rows]
        ts = None if ts is None else ts[keep_rows]
        ratings = None
        steps.append(f"binarise(rating>{threshold:g})")
    elif ratings is not None and not ratings.astype(np.float32).min() > 0:
        row = int(np.flatnonzero(ratings.astype(np.float32) <= 0)[0])  # 1e-50 stores as 0
        raise DataError(
            f"{t.at(row, 'rating')}: rating {t.text('rating').iloc[row].strip()} is not > 0; "
            "every stored rating counts as an interaction, so a 0 or negative one would be "
            "read as a positive; binarise explicitly by adding threshold=T to the dataset's "
            f"options (e.g. csv:{p}?threshold=0 keeps ratings > 0 as 1), ignore the ratings "
            "with rating= (empty), or fix the file"
        )
    ds = Dataset.from_triples("csv", users, items, ratings, ts, all_user_ids=all_users,
                              all_item_ids=all_items, rating_scale=rating_scale)
    ds = replace(ds, name=name or f"csv#{ds.content_sha256()[:16]}")
    ds = _with_source(ds, p, "file")
    for step in steps:
        ds = ds.with_history(step)
    return ds


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
