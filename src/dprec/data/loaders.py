"""Loaders for MovieLens (100K, 1M, 10M, 20M/25M) and generic CSV interaction files.

Every loader reads a local path with pandas and returns a :class:`Dataset` with ratings,
timestamps (where the format has them), raw ids in ``user_ids``/``item_ids`` and side
features indexed by raw id. A missing or corrupt file raises :class:`DataError` naming the
file and the problem.

Side-feature conventions (the same for every MovieLens format):
- ``item_features``: ``title`` (str), ``year`` (nullable Int64), ``genres`` (str, genre
  names joined by ``|``; multi-hot via ``item_features["genres"].str.get_dummies("|")``).
- ``user_features``: ``age``, ``gender``, ``occupation``, ``zip_code`` as the source gives
  them (ML-1M keeps its age-bucket and occupation codes).
"""

from __future__ import annotations

import csv
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from dprec.data.dataset import Dataset
from dprec.errors import DataError

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


# --------------------------------------------------------------------------- helpers


def _read_table(path: Path, **kwargs: object) -> pd.DataFrame:
    """``pd.read_csv`` that turns every failure into a DataError naming ``path``.

    Text is decoded as UTF-8, falling back to latin-1 (older MovieLens files).
    """
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    if path.stat().st_size == 0:
        raise DataError(f"{path}: file is empty")
    encoding = kwargs.pop("encoding", None)
    encodings = (encoding,) if encoding else ("utf-8", "latin-1")
    last: Exception | None = None
    for enc in encodings:
        try:
            return pd.read_csv(path, encoding=enc, **kwargs)  # type: ignore[call-overload]
        except UnicodeDecodeError as e:
            last = e
        except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as e:
            raise DataError(f"{path}: cannot parse ({e})") from e
    raise DataError(f"{path}: cannot decode text ({last})")


def _numeric(df: pd.DataFrame, column: str, path: Path, *, header_lines: int = 0) -> np.ndarray:
    """Column ``column`` as float64, or a DataError naming the first bad line of ``path``."""
    col = df[column]
    if pd.api.types.is_numeric_dtype(col.dtype) and not pd.api.types.is_bool_dtype(col.dtype):
        values = col.astype(np.float64)
    else:
        values = pd.to_numeric(col, errors="coerce")
    bad = values.isna().to_numpy()
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raw = df[column].iloc[row]
        raise DataError(
            f"{path}: line {row + 1 + header_lines}: column {column!r} must be a number, "
            f"got {raw!r} (truncated or corrupt file?)"
        )
    return values.to_numpy(np.float64)


def _integer_ids(values: np.ndarray, column: str, path: Path, header_lines: int = 0) -> np.ndarray:
    """Float ids to int64, rejecting fractional ids."""
    ids = values.astype(np.int64)
    bad = ids != values
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise DataError(
            f"{path}: line {row + 1 + header_lines}: column {column!r} must be an integer id, "
            f"got {values[row]!r}"
        )
    return ids


def _ids(df: pd.DataFrame, column: str, path: Path, header_lines: int = 0) -> np.ndarray:
    """Integer ids, or a DataError naming the first bad line."""
    return _integer_ids(_numeric(df, column, path, header_lines=header_lines), column, path,
                        header_lines)


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


def _split_dat(path: Path, n_fields: int, names: Sequence[str]) -> pd.DataFrame:
    """Read a small ``::``-separated file (users.dat, movies.dat) into string columns."""
    df = _read_table(path, sep="\x1f", header=None, names=["line"], dtype=str,
                     quoting=csv.QUOTE_NONE, skip_blank_lines=True, keep_default_na=False)
    parts = df["line"].str.split("::", n=n_fields - 1, expand=True)
    if parts.shape[1] != n_fields or parts.isna().any().any():
        bad = int(np.flatnonzero(parts.isna().any(axis=1).to_numpy())[0]) \
            if parts.shape[1] == n_fields else 0
        raise DataError(
            f"{path}: line {bad + 1}: expected {n_fields} '::'-separated fields "
            f"({'::'.join(names)}), got {df['line'].iloc[bad]!r}"
        )
    parts.columns = list(names)
    return parts


def _read_dat_ratings(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``UserID::MovieID::Rating::Timestamp`` lines (ML-1M, ML-10M), parsed by the C engine.

    Splitting on ``:`` gives seven fields with empty ones in between; those are checked so
    that a file with single ``:`` separators is rejected rather than misread.
    """
    df = _read_table(path, sep=":", header=None, quoting=csv.QUOTE_NONE,
                     names=list(range(7)), encoding="latin-1")
    if not df[[1, 3, 5]].isna().all().all() or df[6].isna().any():
        bad = ~(df[[1, 3, 5]].isna().all(axis=1) & df[6].notna())
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataError(
            f"{path}: line {row + 1}: expected UserID::MovieID::Rating::Timestamp "
            "(four '::'-separated numbers)"
        )
    users = _ids(df, 0, path)
    items = _ids(df, 2, path)
    ratings = _numeric(df, 4, path)
    ts = _ids(df, 6, path)
    return users, items, ratings, ts


def _movies_features(movies: pd.DataFrame, id_col: str, path: Path,
                     header_lines: int = 0) -> pd.DataFrame:
    ids = _ids(movies, id_col, path, header_lines)
    titles = movies["title"].astype(str).str.strip()
    genres = movies["genres"].fillna("").astype(str).str.strip()
    return pd.DataFrame(
        {"title": titles.to_numpy(), "year": _year_from_title(titles).array,
         "genres": genres.to_numpy()},
        index=pd.Index(ids, name="item_id"),
    )


def _check_nonempty(n: int, path: Path) -> None:
    if n == 0:
        raise DataError(f"{path}: no interactions found")


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


def load_ml100k(path: str | Path) -> Dataset:
    """MovieLens-100K from ``path`` in either the GroupLens layout (``u.data`` tab-separated
    ``user item rating timestamp``; ``u.user`` ``id|age|gender|occupation|zip``; ``u.item``
    ``id|title|date|video|url|19 genre flags``, latin-1) or RecBole's atomic files
    (``ml-100k.inter/.user/.item``, tab-separated with a typed header)."""
    folder = find_ml100k(path)
    if folder is None:
        raise DataError(
            f"{path}: no MovieLens-100K here: expected {'/'.join(GROUPLENS_FILES)} or "
            f"{'/'.join(ATOMIC_FILES)} in this folder or in its ml-100k subfolder"
        )
    if ml100k_layout(folder) == "grouplens":
        return _load_ml100k_grouplens(folder)
    return _load_ml100k_atomic(folder)


def _load_ml100k_grouplens(folder: Path) -> Dataset:
    data_path = folder / "u.data"
    df = _read_table(data_path, sep="\t", header=None, names=["user", "item", "rating", "ts"],
                     quoting=csv.QUOTE_NONE)
    users, items = _ids(df, "user", data_path), _ids(df, "item", data_path)
    ratings, ts = _numeric(df, "rating", data_path), _ids(df, "ts", data_path)
    _check_nonempty(len(df), data_path)

    user_path = folder / "u.user"
    uf = _read_table(user_path, sep="|", header=None,
                     names=["user_id", "age", "gender", "occupation", "zip_code"],
                     dtype=str, quoting=csv.QUOTE_NONE, keep_default_na=False)
    user_features = pd.DataFrame(
        {"age": _ids(uf, "age", user_path), "gender": uf["gender"].to_numpy(),
         "occupation": uf["occupation"].to_numpy(), "zip_code": uf["zip_code"].to_numpy()},
        index=pd.Index(_ids(uf, "user_id", user_path), name="user_id"),
    )

    item_path = folder / "u.item"
    genre_names = _ml100k_genres(folder / "u.genre")
    cols = ["item_id", "title", "date", "video_date", "url", *genre_names]
    it = _read_table(item_path, sep="|", header=None, names=cols, dtype=str,
                     quoting=csv.QUOTE_NONE, encoding="latin-1", keep_default_na=False)
    flags = np.column_stack([_numeric(it, g, item_path) for g in genre_names]) > 0
    names = np.asarray(genre_names, dtype=object)
    genres = ["|".join(names[row]) for row in flags]
    year = pd.to_datetime(it["date"], format="%d-%b-%Y", errors="coerce").dt.year
    item_features = pd.DataFrame(
        {"title": it["title"].str.strip().to_numpy(), "year": year.astype("Int64").array,
         "genres": genres},
        index=pd.Index(_ids(it, "item_id", item_path), name="item_id"),
    )
    return Dataset.from_triples("ml-100k", users, items, ratings, ts,
                                user_features=user_features, item_features=item_features)


def _ml100k_genres(path: Path) -> tuple[str, ...]:
    """Genre names from ``u.genre`` (``name|index``) if present, else the published list."""
    if not path.is_file():
        return ML100K_GENRES
    g = _read_table(path, sep="|", header=None, names=["name", "index"], dtype=str,
                    quoting=csv.QUOTE_NONE, keep_default_na=False).dropna()
    g = g[g["name"] != ""]
    order = _ids(g, "index", path)
    names = tuple(g["name"].to_numpy()[np.argsort(order)])
    if len(names) != len(ML100K_GENRES):
        raise DataError(f"{path}: expected {len(ML100K_GENRES)} genres, got {len(names)}")
    return names


def _read_atomic(path: Path, *, as_text: bool = True) -> tuple[pd.DataFrame, int]:
    """A RecBole atomic file with its typed header (``name:type``) reduced to plain names
    (all columns as text unless ``as_text`` is False)."""
    df = _read_table(path, sep="\t", header=0, dtype=str if as_text else None,
                     quoting=csv.QUOTE_NONE, keep_default_na=not as_text)
    df.columns = [str(c).split(":", 1)[0] for c in df.columns]
    return df, 1


def _require(df: pd.DataFrame, columns: Sequence[str], path: Path) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise DataError(f"{path}: missing column(s) {missing}; header has {list(df.columns)}")


def _load_ml100k_atomic(folder: Path) -> Dataset:
    inter_path = folder / "ml-100k.inter"
    df, h = _read_atomic(inter_path, as_text=False)
    _require(df, ["user_id", "item_id"], inter_path)
    _check_nonempty(len(df), inter_path)
    users, items = _ids(df, "user_id", inter_path, h), _ids(df, "item_id", inter_path, h)
    ratings = _numeric(df, "rating", inter_path, header_lines=h) if "rating" in df else None
    ts = _ids(df, "timestamp", inter_path, h) if "timestamp" in df else None

    user_path = folder / "ml-100k.user"
    uf, h = _read_atomic(user_path)
    _require(uf, ["user_id", "age", "gender", "occupation", "zip_code"], user_path)
    user_features = pd.DataFrame(
        {"age": _ids(uf, "age", user_path, h), "gender": uf["gender"].to_numpy(),
         "occupation": uf["occupation"].to_numpy(), "zip_code": uf["zip_code"].to_numpy()},
        index=pd.Index(_ids(uf, "user_id", user_path, h), name="user_id"),
    )

    item_path = folder / "ml-100k.item"
    it, h = _read_atomic(item_path)
    _require(it, ["item_id", "movie_title", "release_year", "class"], item_path)
    item_features = pd.DataFrame(
        {"title": it["movie_title"].str.strip().to_numpy(),
         "year": pd.to_numeric(it["release_year"], errors="coerce").astype("Int64").array,
         "genres": it["class"].str.split().str.join("|").to_numpy()},
        index=pd.Index(_ids(it, "item_id", item_path, h), name="item_id"),
    )
    return Dataset.from_triples("ml-100k", users, items, ratings, ts,
                                user_features=user_features, item_features=item_features)


# --------------------------------------------------------------------------- ML-1M, ML-10M


def load_ml1m(path: str | Path) -> Dataset:
    """MovieLens-1M: ``ratings.dat`` (``UserID::MovieID::Rating::Timestamp``), ``users.dat``
    (``UserID::Gender::Age::Occupation::Zip-code``) and ``movies.dat``
    (``MovieID::Title::Genres``, genres ``|``-separated), latin-1 encoded."""
    folder = _resolve_dir(path, "ratings.dat", ("ml-1m",))
    users, items, ratings, ts = _read_dat_ratings(folder / "ratings.dat")
    _check_nonempty(len(users), folder / "ratings.dat")
    user_features = None
    user_path = folder / "users.dat"
    if user_path.is_file():
        uf = _split_dat(user_path, 5, ["user_id", "gender", "age", "occupation", "zip_code"])
        user_features = pd.DataFrame(
            {"age": _ids(uf, "age", user_path), "gender": uf["gender"].to_numpy(),
             "occupation": _ids(uf, "occupation", user_path),
             "zip_code": uf["zip_code"].to_numpy()},
            index=pd.Index(_ids(uf, "user_id", user_path), name="user_id"),
        )
    else:
        log.warning("%s not found: loading ML-1M without user features", user_path)
    item_features = _dat_movies(folder / "movies.dat")
    return Dataset.from_triples("ml-1m", users, items, ratings, ts,
                                user_features=user_features, item_features=item_features)


def load_ml10m(path: str | Path) -> Dataset:
    """MovieLens-10M (folder ``ml-10M100K``): ``ratings.dat`` as ML-1M (half-star ratings)
    and ``movies.dat`` (``MovieID::Title::Genres``); there is no user file."""
    folder = _resolve_dir(path, "ratings.dat", ("ml-10M100K", "ml-10m"))
    users, items, ratings, ts = _read_dat_ratings(folder / "ratings.dat")
    _check_nonempty(len(users), folder / "ratings.dat")
    item_features = _dat_movies(folder / "movies.dat")
    return Dataset.from_triples("ml-10m", users, items, ratings, ts,
                                item_features=item_features)


def _dat_movies(path: Path) -> pd.DataFrame | None:
    if not path.is_file():
        log.warning("%s not found: loading without item features", path)
        return None
    movies = _split_dat(path, 3, ["item_id", "title", "genres"])
    return _movies_features(movies, "item_id", path)


# --------------------------------------------------------------------------- ML-20M, ML-25M


def load_movielens_csv(path: str | Path, *, name: str | None = None) -> Dataset:
    """MovieLens-20M/25M (and the other CSV releases): ``ratings.csv`` with header
    ``userId,movieId,rating,timestamp`` and, if present, ``movies.csv``
    (``movieId,title,genres``). ``name`` defaults to the folder name (e.g. ``ml-25m``)."""
    folder = _resolve_dir(path, "ratings.csv", ("ml-20m", "ml-25m"))
    rpath = folder / "ratings.csv"
    df = _read_table(rpath, sep=",", header=0)
    _require(df, ["userId", "movieId", "rating", "timestamp"], rpath)
    _check_nonempty(len(df), rpath)
    users, items = _ids(df, "userId", rpath, 1), _ids(df, "movieId", rpath, 1)
    ratings, ts = _numeric(df, "rating", rpath, header_lines=1), _ids(df, "timestamp", rpath, 1)
    del df
    item_features = None
    mpath = folder / "movies.csv"
    if mpath.is_file():
        movies = _read_table(mpath, sep=",", header=0, dtype=str, keep_default_na=False)
        _require(movies, ["movieId", "title", "genres"], mpath)
        item_features = _movies_features(movies, "movieId", mpath, header_lines=1)
    else:
        log.warning("%s not found: loading without item features", mpath)
    return Dataset.from_triples(name or folder.name.lower(), users, items, ratings, ts,
                                item_features=item_features)


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


def _base_name(field: str) -> str:
    return field.strip().strip('"').split(":", 1)[0].strip().lower()


def _as_ids(series: pd.Series) -> np.ndarray:
    """Integer ids where every value is an integer, else strings."""
    num = pd.to_numeric(series, errors="coerce")
    if not num.isna().any():
        v = num.to_numpy(np.float64)
        if np.all(v == np.floor(v)):
            return v.astype(np.int64)
    return series.astype(str).to_numpy(dtype=str)


def load_csv(
    path: str | Path,
    *,
    sep: str | None = None,
    header: bool | None = None,
    columns: Sequence[str | None] | None = None,
    name: str | None = None,
) -> Dataset:
    """Interactions ``user,item[,rating][,timestamp]`` from a delimited text file.

    ``sep`` is sniffed from the first line (tab, comma, semicolon, pipe, else whitespace)
    unless given. ``header`` is detected when None: the first line is a header if one of its
    fields is a known column name (``user``, ``userId``, ``item``, ``app``, ``rating``,
    ``cnt``, ``timestamp``, RecBole ``name:type`` fields, ...). ``columns`` names the role of
    each column in file order (``"user"``, ``"item"``, ``"rating"``, ``"timestamp"`` or None
    to skip); without it, a header is matched by name and a headerless file is read by
    position (2 columns: user, item; 3: + rating; 4: + timestamp). Ids that are all integers
    are kept as integers, others as strings. Without a rating column every interaction is 1;
    timestamps may be numbers or date strings (converted to Unix seconds).
    """
    p = Path(path).expanduser()
    if not p.is_file():
        raise DataError(f"{p}: file not found")
    try:
        with p.open(encoding="utf-8", errors="replace") as f:
            first = f.readline().rstrip("\r\n")
    except OSError as e:
        raise DataError(f"{p}: cannot read ({e})") from e
    if not first.strip():
        raise DataError(f"{p}: file is empty or starts with a blank line")
    sep = sep or _sniff_sep(first)
    fields = first.split() if sep == r"\s+" else first.split(sep)
    base = [_base_name(f) for f in fields]
    if header is None:
        header = any(b in _ALIAS_TO_ROLE for b in base) and not all(
            re.fullmatch(r"-?\d+(\.\d*)?", f.strip()) for f in fields)
    header_lines = int(header)

    if columns is not None:
        roles = [c.lower() if c else None for c in columns]
        if len(roles) > len(fields):
            raise DataError(f"{p}: columns names {len(roles)} columns, the file has "
                            f"{len(fields)}")
        roles += [None] * (len(fields) - len(roles))
        unknown = sorted({r for r in roles if r and r not in ROLE_ALIASES})
        if unknown:
            raise DataError(f"columns must name roles in {list(ROLE_ALIASES)}, got {unknown}")
    elif header:
        roles = [_ALIAS_TO_ROLE.get(b) for b in base]
        seen: set[str] = set()
        for k, r in enumerate(roles):
            if r in seen:
                roles[k] = None
            elif r:
                seen.add(r)
    else:
        positional: dict[int, list[str | None]] = {
            2: ["user", "item"], 3: ["user", "item", "rating"],
            4: ["user", "item", "rating", "timestamp"],
        }
        if len(fields) not in positional:
            raise DataError(
                f"{p}: a headerless file needs 2 to 4 columns (user, item[, rating]"
                f"[, timestamp]), found {len(fields)}; pass columns=[...] to name them"
            )
        roles = list(positional[len(fields)])
    for required in ("user", "item"):
        if required not in roles:
            raise DataError(f"{p}: no {required} column found in {fields!r}; pass "
                            "columns=[...] (e.g. ['user', 'item', 'rating'])")

    keep = [k for k, r in enumerate(roles) if r]
    df = _read_table(p, sep=sep, header=None, skiprows=header_lines, usecols=keep,
                     names=list(range(len(fields))), dtype=str, keep_default_na=False,
                     na_values=[""], engine="python" if sep == r"\s+" else "c")
    df.columns = [roles[k] for k in keep]
    _check_nonempty(len(df), p)
    for role in ("user", "item"):
        missing = df[role].isna().to_numpy()
        if missing.any():
            row = int(np.flatnonzero(missing)[0])
            raise DataError(f"{p}: line {row + 1 + header_lines}: empty {role} id")
    users, items = _as_ids(df["user"]), _as_ids(df["item"])
    ratings = (_numeric(df, "rating", p, header_lines=header_lines)
               if "rating" in df.columns else None)
    ts = None
    if "timestamp" in df.columns:
        ts = _timestamps(df["timestamp"], p, header_lines)
    return Dataset.from_triples(name or f"csv:{p.name}", users, items, ratings, ts)


def _timestamps(values: pd.Series, path: Path, header_lines: int) -> np.ndarray:
    num = pd.to_numeric(values, errors="coerce")
    if not num.isna().any():
        return num.to_numpy(np.float64).astype(np.int64)
    dates = pd.to_datetime(values, errors="coerce", utc=True)
    bad = dates.isna().to_numpy()
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise DataError(f"{path}: line {row + 1 + header_lines}: timestamp must be a number "
                        f"or a date, got {values.iloc[row]!r}")
    epoch = pd.Timestamp("1970-01-01", tz="UTC")
    return ((dates - epoch) // pd.Timedelta(seconds=1)).to_numpy(np.int64)
