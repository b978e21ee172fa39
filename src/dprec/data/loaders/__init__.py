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

from dprec.data.loaders.csv import ROLE_ALIASES, Role, load_csv
from dprec.data.loaders.frappe import FRAPPE_COLUMNS, FRAPPE_CONTEXT, load_frappe
from dprec.data.loaders.movielens import (
    ATOMIC_FILES,
    GROUPLENS_FILES,
    HALF_STAR_SCALE,
    ML100K_GENRES,
    RELEASES,
    STAR_SCALE,
    Layout,
    Release,
    find_ml100k,
    load_ml1m,
    load_ml10m,
    load_ml100k,
    load_movielens_csv,
    ml100k_layout,
)

__all__ = [
    "ATOMIC_FILES", "FRAPPE_COLUMNS", "FRAPPE_CONTEXT", "GROUPLENS_FILES", "HALF_STAR_SCALE",
    "Layout", "ML100K_GENRES", "RELEASES", "ROLE_ALIASES", "Release", "Role", "STAR_SCALE",
    "find_ml100k", "load_csv", "load_frappe", "load_ml100k", "load_ml10m", "load_ml1m",
    "load_movielens_csv", "ml100k_layout",
]
