"""What every loader shares: reading a file into a table safely (encoding, compression,
binary files refused), ids parsed exactly from their text, and the checks and history every
loaded :class:`Dataset` gets. Private to :mod:`dprec.data.loaders`."""

from __future__ import annotations

import codecs
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from dprec.data.dataset import Dataset
from dprec.errors import DataError

__all__: list[str] = []


_INTEGER_TEXT = r"[+-]?\d+(?:\.0*)?"  # an integer, possibly written 12.0
_CANONICAL_INT = r"-?(?:0|[1-9]\d*)"  # an integer written the one way int() prints it
_MAGIC = (
    (b"\x1f\x8b", "gzip", "gunzip"), (b"PK\x03\x04", "zip", "unzip"),
    (b"\xfd7zXZ\x00", "xz", "unxz"), (b"\x28\xb5\x2f\xfd", "zstd", "unzstd"),
)


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


def _check_nonempty(n: int, path: Path) -> None:
    if n == 0:
        raise DataError(f"{path}: no interactions found")


def _with_source(ds: Dataset, path: Path, source: str | None) -> Dataset:
    where = path.expanduser().resolve()
    return ds.with_history(f"source: {source} {where}" if source else f"source: {where}")


def _require(df: pd.DataFrame, columns: Sequence[str], path: Path) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise DataError(f"{path}: missing column(s) {missing}; header has {list(df.columns)}")
