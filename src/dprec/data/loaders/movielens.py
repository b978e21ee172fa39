"""MovieLens loaders: 100K (GroupLens and RecBole atomic layouts), 1M and 10M (``::``
files), and the CSV releases (20M, 25M), with each official release's rating count and
time span (:data:`RELEASES`) checked."""

from __future__ import annotations

import csv
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from dprec.data.dataset import Dataset
from dprec.data.loaders.common import (
    _check_nonempty,
    _numeric_table,
    _read_table,
    _require,
    _resolve_dir,
    _Table,
    _with_source,
)
from dprec.errors import DataError

__all__ = [
    "ATOMIC_FILES", "GROUPLENS_FILES", "HALF_STAR_SCALE", "Layout", "ML100K_GENRES", "RELEASES",
    "Release", "STAR_SCALE", "find_ml100k", "load_ml100k", "load_ml10m", "load_ml1m",
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
_STARS = np.arange(1.0, 6.0)
_HALF_STARS = np.arange(1.0, 11.0) / 2
STAR_SCALE = (1.0, 5.0)
"""The declared rating scale of ML-100K and ML-1M (whole stars)."""
HALF_STAR_SCALE = (0.5, 5.0)
"""The declared rating scale of ML-10M, ML-20M and ML-25M (half stars)."""


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


def _year_from_title(titles: pd.Series) -> pd.Series:
    return pd.to_numeric(titles.str.extract(_YEAR_IN_TITLE, expand=False),
                         errors="coerce").astype("Int64")


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
