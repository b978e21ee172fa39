"""Datasets by name: ``load_dataset("ml-100k")``, ``"ml-1m"``, ``"frappe"``, ``"csv:PATH"``,
``"csv:PATH?user=uid&item=iid"``, ``"synthetic-1000x1000"``, ``"synth-1000x1000"``, ..., and
any of them with the papers' filters ``NAME:gtT`` (ratings > T as implicit feedback) and
``NAME:minN`` (users with >= N interactions), e.g. ``"ml-20m:min60"``,
``"ml-20m:gt3.5:min5"``."""

from __future__ import annotations

import logging
import os
import re
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from dprec.data.dataset import Dataset
from dprec.data.fetch import fetch_and_load_ml100k
from dprec.data.filters import binarise, min_interactions
from dprec.data.grouplens import ARCHIVES, load_cached, movielens_cache_path
from dprec.data.loaders import (
    load_csv,
    load_frappe,
    load_ml1m,
    load_ml10m,
    load_movielens_csv,
)
from dprec.data.synthetic import default_interactions, synthetic, synthetic_truth
from dprec.data.synthetic_drift import (
    drift_default_interactions,
    synthetic_drift,
    synthetic_drift_truth,
)
from dprec.data.truth import SyntheticTruth
from dprec.errors import DataError, UnknownDatasetError
from dprec.random import derive_generator

__all__ = ["KNOWN_DATASETS", "dataset_truth", "load_dataset", "missing_data", "split_filters"]

log = logging.getLogger(__name__)

KNOWN_DATASETS: tuple[str, ...] = (
    "ml-100k", "ml-1m", "ml-10m", "ml-20m", "ml-25m", "frappe",
    "csv:PATH[?user=COL&item=COL&...]",
    "synthetic-<users>x<items>[-<interactions>]",
    "synth-<users>x<items>[-<interactions>]",
    "<any of these>:min<N>",
    "<any of these>:gt<T>",
)

_SYNTHETIC = re.compile(r"(synthetic|synth)-(\d+)x(\d+)(?:-(\d+))?")
"""``synthetic-*``: the original generator (:mod:`dprec.data.synthetic`), kept so that earlier
results reproduce; ``synth-*``: the generator with a cold tail and drift in time
(:mod:`dprec.data.synthetic_drift`), for new work."""
_FILTER = re.compile(r"(.+):(min|gt)(\d+(?:\.\d+)?)", re.IGNORECASE)
"""One filter at the end of a name: ``:minN`` or ``:gtT``."""


@dataclass(frozen=True)
class _Local:
    """A data set read from a local folder only (``--data-dir`` / ``DPREC_DATA``)."""

    loader: Callable[..., Dataset]
    marker: str
    """The file that identifies the folder."""
    folders: tuple[str, ...]
    """Names the folder usually has below the data dir."""
    label: str
    """The name in messages."""
    hint: str
    """What ``--data-dir`` must point at."""


def _movielens(name: str, loader: Callable[..., Dataset], marker: str,
               *folders: str) -> _Local:
    return _Local(loader, marker, folders, name.upper(), f"the extracted {folders[0]} folder")


_LOCAL: dict[str, _Local] = {
    "ml-1m": _movielens("ml-1m", load_ml1m, "ratings.dat", "ml-1m"),
    "ml-10m": _movielens("ml-10m", load_ml10m, "ratings.dat", "ml-10M100K", "ml-10m"),
    "ml-20m": _movielens("ml-20m", lambda p, **kw: load_movielens_csv(p, name="ml-20m", **kw),
                         "ratings.csv", "ml-20m"),
    "ml-25m": _movielens("ml-25m", lambda p, **kw: load_movielens_csv(p, name="ml-25m", **kw),
                         "ratings.csv", "ml-25m"),
    "frappe": _Local(load_frappe, "frappe.csv", ("frappe",), "Frappe",
                     "the folder holding frappe.csv (and meta.csv, for app categories)"),
}
"""Data sets read from a local folder (or, for the MovieLens releases, the cache), by name."""

_SEPARATORS = {"tab": "\t", "comma": ",", "semicolon": ";", "pipe": "|", "space": r"\s+",
               "whitespace": r"\s+"}
_CSV_OPTIONS = ("user", "item", "rating", "timestamp", "sep", "header", "threshold",
                "rating_min", "rating_max")


def load_dataset(name: str, *, data_dir: str | Path | None = None, seed: int = 0) -> Dataset:
    """The dataset called ``name`` (one of :data:`KNOWN_DATASETS`).

    ``ml-100k`` is fetched automatically (see :mod:`dprec.data.fetch`; ``data_dir`` wins
    over the cache); the larger MovieLens releases are read from ``data_dir`` (or
    ``DPREC_DATA``: the extracted folder itself or the folder containing it) if it holds
    them, else from the verified cache that ``dprec data fetch ml-1m|ml-10m|ml-20m|ml-25m``
    fills (:mod:`dprec.data.grouplens`; never downloaded implicitly). ``frappe`` (not downloadable)
    needs the folder holding ``frappe.csv`` (:func:`dprec.data.loaders.load_frappe`).

    ``csv:PATH`` reads a generic interaction file (:func:`dprec.data.loaders.load_csv`),
    named by its content (``csv#<sha256 prefix>``), so the same file at two paths gives the
    same random streams. Options follow a ``?``, joined by ``&`` (URL-quoted if needed):
    ``user=COL``, ``item=COL``, ``rating=COL``, ``timestamp=COL`` name the columns (a header
    name or a 1-based position; ``rating=`` with no column ignores ratings);
    ``sep=tab|comma|semicolon|pipe|space|<char>``; ``header=yes|no``; ``threshold=T`` keeps
    ratings > T as implicit feedback (1) and drops the rest (ratings <= 0 are an error
    without it); ``rating_min=LOW&rating_max=HIGH`` declare the public rating scale (both or
    neither; a file does not state it, and local-DP rating systems such as ldp-svd need
    it). Example (quoted in a shell, for the ``&``):
    ``"csv:data/r.csv?user=uid&item=iid&rating=stars&timestamp=ts&rating_min=1&rating_max=5"``.

    Synthetic data ``synth-<users>x<items>[-<interactions>]`` (the generator with ML-100K's
    cold tail and drift in time, :mod:`dprec.data.synthetic_drift`; use it for new work) and
    ``synthetic-<users>x<items>[-<interactions>]`` (the original generator, every item warm
    and no drift; kept so that earlier results reproduce) default to ML-100K's density
    (6.3%), ``synth-*`` to at most ML-100K's 106 interactions per user as well
    (:func:`dprec.data.synthetic_drift.drift_default_interactions`: 7.95M at 75,000 x
    10,000, as MovieLens users rate about as many items at every size); both are drawn from
    a stream derived from ``(seed, name)``; their oracle is :func:`dataset_truth`.

    ``NAME:minN`` is the data set ``NAME`` restricted to the users with at least ``N``
    interactions (and the items they interacted with): the papers' filter, e.g.
    ``ml-20m:min60`` (seeds 000 and 003). ``NAME:gtT`` keeps the ratings > ``T`` as implicit
    feedback (1) and drops the others (:func:`dprec.data.filters.binarise`). Filters apply
    left to right: ``ml-20m:gt3.5:min5`` is Liang et al.'s ML-20M (ratings > 3.5, then users
    with >= 5 of them; the DPALS protocol). The data set is named with its filters, so its
    random streams differ from ``NAME``'s, and its history records them.
    """
    base, steps = split_filters(name)
    ds = _load_base(base, data_dir, seed)
    if not steps:
        return ds
    label = ds.name
    for kind, value in steps:
        label += f":{kind}{value:g}"
        if kind == "gt":
            if ds.rating_scale is None and bool((ds.matrix.data == 1).all()):
                raise DataError(f"{label}: {ds.name} is implicit feedback (every rating 1); "
                                ":gtT needs ratings: drop the filter")
            ds = binarise(ds, value)
        else:
            ds = min_interactions(ds, int(value), 1)
        if kind == "min" and ds.n_users == 0:
            raise DataError(f"{label}: no user of {base} has {value:g} or more "
                            "interactions; lower N")
        if ds.n_interactions == 0:
            raise DataError(f"{label}: no rating of {base} is > {value:g}; lower T")
    return replace(ds, name=label)


def split_filters(name: str) -> tuple[str, tuple[tuple[str, float], ...]]:
    """``"ml-20m:gt3.5:min5"`` to ``("ml-20m", (("gt", 3.5), ("min", 5.0)))``, the filters in
    the order they apply; a name without filters to ``(name, ())``."""
    key, steps = name.strip(), []
    while (m := _FILTER.fullmatch(key)) is not None:
        kind, text = m.group(2).lower(), m.group(3)
        if kind == "min" and ("." in text or int(text) < 1):
            raise DataError(f"{name}: the filter :min{text} needs N >= 1 (users with at "
                            "least N interactions, a whole number)")
        steps.append((kind, float(text)))
        key = m.group(1).strip()
    return key, tuple(reversed(steps))


def _load_base(key: str, data_dir: str | Path | None, seed: int) -> Dataset:
    """The data set ``key`` without a ``:minN`` filter."""
    low = key.lower()
    if low == "ml-100k":
        return fetch_and_load_ml100k(data_dir)
    if low in _LOCAL:
        return _load_local(low, data_dir)
    if low.startswith("csv:"):
        path, options = _csv_spec(key[4:])
        return load_csv(path, **options)
    spec = _synthetic_spec(low)
    if spec is not None:
        make = synthetic_drift if spec[0] == "synth" else synthetic
        return make(*spec[1:4], rng=derive_generator(seed, "dataset", low),
                    min_user_interactions=spec[4], name=low)
    raise UnknownDatasetError(f"unknown dataset {key!r}; known: {', '.join(KNOWN_DATASETS)}")


def _synthetic_spec(low: str) -> tuple[str, int, int, int, int] | None:
    """(generator, users, items, interactions, minimum per user) of a synthetic name, or None
    for another name."""
    m = _SYNTHETIC.fullmatch(low)
    if m is None:
        return None
    n_users, n_items = int(m.group(2)), int(m.group(3))
    default = drift_default_interactions if m.group(1) == "synth" else default_interactions
    n = int(m.group(4)) if m.group(4) else default(n_users, n_items)
    return m.group(1), n_users, n_items, n, min(20, max(1, n // (2 * max(1, n_users))), n_items)


def dataset_truth(name: str, *, seed: int = 0) -> SyntheticTruth:
    """The oracle of the synthetic data set ``load_dataset(name, seed=seed)``: the generator's
    own scores (:class:`dprec.data.truth.SyntheticTruth`), drawn from the same stream, no
    interaction drawn. A ``:minN`` name gives its base data set's oracle, indexed by raw ids
    (``Dataset.user_ids`` / ``item_ids`` map the filtered indices to them)."""
    low = split_filters(name)[0].lower()
    spec = _synthetic_spec(low)
    if spec is None:
        raise DataError(f"{name}: only synthetic data sets (synth-<users>x<items>, "
                        "synthetic-<users>x<items>) have an oracle")
    make = synthetic_drift_truth if spec[0] == "synth" else synthetic_truth
    return make(*spec[1:4], rng=derive_generator(seed, "dataset", low),
                min_user_interactions=spec[4])


def _csv_spec(spec: str) -> tuple[str, dict[str, object]]:
    """``PATH[?key=value&...]`` to the path and :func:`load_csv` keyword arguments."""
    if not spec:
        raise DataError("csv: needs a path, e.g. csv:data/appusage.csv")
    path, mark, query = spec.rpartition("?")
    if not mark or Path(spec).expanduser().exists():
        return spec, {}
    if not path:
        raise DataError(f"csv:{spec}: needs a path before '?', e.g. csv:data/r.csv?{query}")
    options: dict[str, str] = {}
    for part in query.split("&"):
        key, eq, value = part.partition("=")
        key = key.strip().lower()
        if not eq or key not in _CSV_OPTIONS:
            raise DataError(f"csv:{spec}: option {part!r} is not KEY=VALUE with KEY one of "
                            f"{', '.join(_CSV_OPTIONS)}")
        if key in options:
            raise DataError(f"csv:{spec}: option {key!r} is given twice")
        options[key] = urllib.parse.unquote(value).strip()
    kwargs: dict[str, object] = {}
    names = {r: options.pop(r) for r in ("user", "item", "rating", "timestamp") if r in options}
    if names:
        kwargs["names"] = names
    if "sep" in options:
        sep = options.pop("sep")
        if sep.lower() not in _SEPARATORS and len(sep) != 1:
            raise DataError(f"csv:{spec}: sep={sep!r} must be one of "
                            f"{', '.join(_SEPARATORS)} or a single character")
        kwargs["sep"] = _SEPARATORS.get(sep.lower(), sep)
    if "header" in options:
        flag = options.pop("header").lower()
        if flag not in ("yes", "no", "true", "false", "1", "0"):
            raise DataError(f"csv:{spec}: header={flag!r} must be yes or no")
        kwargs["header"] = flag in ("yes", "true", "1")
    if "threshold" in options:
        kwargs["threshold"] = _number(spec, options, "threshold")
    if ("rating_min" in options) != ("rating_max" in options):
        raise DataError(f"csv:{spec}: give rating_min and rating_max together (the public "
                        "rating scale), e.g. rating_min=1&rating_max=5")
    if "rating_min" in options:
        kwargs["rating_scale"] = (_number(spec, options, "rating_min"),
                                  _number(spec, options, "rating_max"))
    return path, kwargs


def _number(spec: str, options: dict[str, str], key: str) -> float:
    text = options.pop(key)
    try:
        return float(text)
    except ValueError:
        raise DataError(f"csv:{spec}: {key}={text!r} must be a number") from None


def missing_data(name: str, data_dir: str | Path | None = None) -> str | None:
    """Why ``load_dataset(name)`` cannot find its files here (what to run or pass), or None
    when they are there (or need none: ML-100K is fetched, synthetic data drawn). A cheap
    look for the folder or the cache; loading still verifies them."""
    low = split_filters(name)[0].lower()
    if low not in _LOCAL:
        return None
    spec = _LOCAL[low]
    if _local_folder(spec, data_dir) is not None:
        return None
    if low in ARCHIVES and movielens_cache_path(low).is_dir():
        return None
    fetch = f"run `dprec data fetch {low}`, or " if low in ARCHIVES else ""
    return (f"{spec.label} is not on this machine: {fetch}pass --data-dir PATH pointing at "
            f"{spec.hint} (or set DPREC_DATA)")


def _local_folder(spec: _Local, data_dir: str | Path | None) -> Path | None:
    """The folder under the data dir (``data_dir`` or ``DPREC_DATA``) that holds
    ``spec.marker``: the data dir itself or one of ``spec.folders`` below it; None if none."""
    root = data_dir if data_dir is not None else os.environ.get("DPREC_DATA")
    if not root:
        return None
    base = Path(root).expanduser()
    return next((f for f in (base, *(base / f for f in spec.folders))
                 if (f / spec.marker).is_file()), None)


def _load_local(name: str, data_dir: str | Path | None) -> Dataset:
    """From the data dir (``data_dir`` or ``DPREC_DATA``) if it holds the data set, else from
    the cache that ``dprec data fetch NAME`` fills (downloadable releases only)."""
    spec = _LOCAL[name]
    root = data_dir if data_dir is not None else os.environ.get("DPREC_DATA")
    downloadable = name in ARCHIVES
    not_there = ""
    folder = _local_folder(spec, data_dir)
    if folder is not None:
        log.info("%s: loading %s", spec.label, folder)
        return spec.loader(folder, source="data-dir")
    if root:
        base = Path(root).expanduser()
        not_there = (f"no {spec.marker} in {base} or in "
                     f"{', '.join(str(base / f) for f in spec.folders)}")
        if not downloadable:
            raise DataError(f"{spec.label}: {not_there}; pass --data-dir PATH pointing at "
                            f"{spec.hint}")
        log.warning("%s: %s; looking in the cache", spec.label, not_there)
    if not downloadable:
        raise DataError(f"{spec.label} cannot be downloaded here; pass --data-dir PATH pointing "
                        f"at {spec.hint} (or set DPREC_DATA)")
    cached = load_cached(name)
    if cached is not None:
        log.info("%s: loading the cache %s", spec.label, cached)
        return spec.loader(cached, source="cache")
    also = f"{not_there}, and " if not_there else ""
    raise DataError(
        f"{spec.label}: {also}not in the cache {movielens_cache_path(name)}: run `dprec data "
        f"fetch {name}` to download and verify it, or pass --data-dir PATH pointing at "
        f"{spec.hint} (or set DPREC_DATA)"
    )
