"""Datasets by name: ``load_dataset("ml-100k")``, ``"ml-1m"``, ``"csv:PATH"``,
``"synthetic-1000x1000"``, ..."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable
from pathlib import Path

from dprec.data.dataset import Dataset
from dprec.data.fetch import fetch_and_load_ml100k
from dprec.data.loaders import load_csv, load_ml1m, load_ml10m, load_movielens_csv
from dprec.data.synthetic import default_interactions, synthetic
from dprec.errors import DataError
from dprec.random import derive_generator

log = logging.getLogger(__name__)

KNOWN_DATASETS: tuple[str, ...] = (
    "ml-100k", "ml-1m", "ml-10m", "ml-20m", "ml-25m", "csv:PATH",
    "synthetic-<users>x<items>[-<interactions>]",
)

_SYNTHETIC = re.compile(r"synthetic-(\d+)x(\d+)(?:-(\d+))?")

# name -> (loader, marker file, folder names the extracted archive uses)
_LOCAL: dict[str, tuple[Callable[[Path], Dataset], str, tuple[str, ...]]] = {
    "ml-1m": (load_ml1m, "ratings.dat", ("ml-1m",)),
    "ml-10m": (load_ml10m, "ratings.dat", ("ml-10M100K", "ml-10m")),
    "ml-20m": (lambda p: load_movielens_csv(p, name="ml-20m"), "ratings.csv", ("ml-20m",)),
    "ml-25m": (lambda p: load_movielens_csv(p, name="ml-25m"), "ratings.csv", ("ml-25m",)),
}


def load_dataset(name: str, *, data_dir: str | Path | None = None, seed: int = 0) -> Dataset:
    """The dataset called ``name`` (one of :data:`KNOWN_DATASETS`).

    ``ml-100k`` is fetched automatically (see :mod:`dprec.data.fetch`); the larger
    MovieLens releases need ``data_dir`` (or ``DPREC_DATA``): the extracted folder itself or
    the folder containing it. ``csv:PATH`` reads a generic interaction file. Synthetic data
    ``synthetic-<users>x<items>[-<interactions>]`` defaults to ML-100K's density (6.3%) and
    is drawn from a stream derived from ``(seed, name)``.
    """
    key = name.strip()
    low = key.lower()
    if low == "ml-100k":
        return fetch_and_load_ml100k(data_dir)
    if low in _LOCAL:
        return _load_local(low, data_dir)
    if low.startswith("csv:"):
        path = key[4:]
        if not path:
            raise DataError("csv: needs a path, e.g. csv:data/appusage.csv")
        return load_csv(path, name=key)
    m = _SYNTHETIC.fullmatch(low)
    if m:
        n_users, n_items = int(m.group(1)), int(m.group(2))
        n = int(m.group(3)) if m.group(3) else default_interactions(n_users, n_items)
        min_user = min(20, max(1, n // (2 * max(1, n_users))), n_items)
        return synthetic(n_users, n_items, n, rng=derive_generator(seed, "dataset", low),
                         min_user_interactions=min_user, name=low)
    raise DataError(f"unknown dataset {name!r}; known: {', '.join(KNOWN_DATASETS)}")


def _load_local(name: str, data_dir: str | Path | None) -> Dataset:
    loader, marker, folders = _LOCAL[name]
    label = name.upper()
    root = data_dir if data_dir is not None else os.environ.get("DPREC_DATA")
    if not root:
        raise DataError(
            f"{label} cannot be downloaded here; pass --data-dir PATH pointing at the "
            f"extracted {folders[0]} folder (or set DPREC_DATA)"
        )
    base = Path(root).expanduser()
    for folder in (base, *(base / f for f in folders)):
        if (folder / marker).is_file():
            log.info("%s: loading %s", label, folder)
            return loader(folder)
    raise DataError(
        f"{label}: no {marker} in {base} or in {', '.join(str(base / f) for f in folders)}; "
        f"pass --data-dir PATH pointing at the extracted {folders[0]} folder"
    )
