"""What a results folder holds, read and checked: the comparisons of ``dprec compare``
(``results.json``, or ``systems/*.json`` of one that stopped early), the run files of
``dprec run`` and the figures (PNG) of the experiments.

The files are untrusted input: every JSON file is parsed strictly enough that a corrupt or
misshapen one is refused with its path and what to do, never half shown.
"""

from __future__ import annotations

import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dprec.errors import DprecError

__all__ = [
    "COMPARISON_FILE", "Figure", "MAX_FIGURE_BYTES", "ResultSet", "ResultsFolderContents",
    "ResultsFolderError", "read_results_folder",
]

COMPARISON_FILE = "results.json"
"""The file ``dprec compare`` writes once every system has run (evaluation.compare)."""
MAX_FIGURE_BYTES = 10_000_000
"""A PNG larger than this is listed, not embedded (the page stays one file of sane size)."""
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_COMPARISON_FIGURES = ("hr10_vs_eps.png", "hr10_vs_user_eps.png", "hr_at_k.png",
                       "hr_at_k_full.png")
"""The plots a comparison writes: the report redraws them from the data, not embeds them."""


class ResultsFolderError(DprecError):
    """A results folder that is missing, empty of results, or holds a corrupt file: the
    message names the path and says what to do."""


@dataclass
class ResultSet:
    """Results shown together: one comparison, or the run files of one folder.

    ``results``: row label -> a run's result document (``RunResult.to_json``); ``sweep``:
    the comparison's ε sweep (system -> points), None if it has none.
    """

    where: str
    kind: str
    dataset: str
    results: dict[str, dict[str, Any]]
    sweep: dict[str, list[dict[str, Any]]] | None = None
    failed: dict[str, str] = field(default_factory=dict)
    stopped: str | None = None
    sweep_metric: tuple[str, str] | None = None
    """The sweep's (metric, protocol) as ``dprec compare`` recorded it; None: not recorded
    (a comparison from before it was, whose ranking sweep is sampled HR@10)."""


@dataclass
class Figure:
    """A PNG found in the folder (an experiment's figure), checked to decode."""

    where: str
    data: bytes


@dataclass
class ResultsFolderContents:
    """Everything a report shows from one folder, and the files it left out (with why)."""

    root: Path
    sets: list[ResultSet]
    figures: list[Figure]
    skipped: list[tuple[str, str]]


def _load_json(path: Path, root: Path) -> Any:
    """``path`` parsed as JSON, or a :class:`ResultsFolderError` that names it."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        why = "it is not UTF-8 text"
    except json.JSONDecodeError as e:
        why = f"it is not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})"
    except OSError as e:
        why = f"it cannot be read ({e.strerror or e})"
    raise ResultsFolderError(
        f"{path}: {why}; the run that wrote it may have stopped while writing. Rerun it, or "
        f"move the file out of {root} and run `dprec report` again")


def _is_number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


_NON_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}
"""How strict JSON writes a non-finite number (:func:`dprec.privacy.events.strict_json`)."""


def _number(v: object) -> object:
    """``v`` with the text "inf", "-inf" or "nan" read back as that float; a file written
    before results were strict JSON holds a bare NaN / Infinity, which ``json`` reads as is."""
    return _NON_FINITE[v] if isinstance(v, str) and v in _NON_FINITE else v


def _check_run(doc: Any, path: Path) -> dict[str, Any]:
    """``doc`` if it has a run result's shape (system, metrics of mean/std numbers, privacy
    a dict or null), else a :class:`ResultsFolderError` naming ``path``."""
    def bad(what: str) -> ResultsFolderError:
        return ResultsFolderError(f"{path}: {what}; it is not a result that `dprec run` or "
                                  "`dprec compare` writes. Rerun it, or move the file out")
    if not isinstance(doc, dict) or not isinstance(doc.get("system"), str):
        raise bad("no system name")
    metrics = doc.get("metrics")
    if not isinstance(metrics, dict) or not metrics:
        raise bad("no metrics")
    read: dict[str, dict[str, Any]] = {}
    for proto, values in metrics.items():
        if not isinstance(values, dict):
            raise bad(f"metrics[{proto!r}] is not a table")
        read[proto] = {}
        for name, v in values.items():
            if not isinstance(v, dict):
                raise bad(f"metrics[{proto!r}][{name!r}] has no numeric mean and std")
            v = {**v, "mean": _number(v.get("mean")), "std": _number(v.get("std"))}
            if not (_is_number(v["mean"]) and _is_number(v["std"])):
                raise bad(f"metrics[{proto!r}][{name!r}] has no numeric mean and std")
            read[proto][name] = v
    privacy = doc.get("privacy")
    if privacy is not None and not isinstance(privacy, dict):
        raise bad("privacy is neither a report nor null")
    if isinstance(privacy, dict) and not isinstance(privacy.get("levels") or {}, dict):
        raise bad("privacy.levels is not a table")
    return {**doc, "metrics": read}


def _check_sweep(sweep: Any, path: Path) -> dict[str, list[dict[str, Any]]] | None:
    """The ε sweep of a comparison (system -> points with numeric epsilon, mean, std,
    user_epsilon; "inf", "-inf" and "nan" read as those floats), or None."""
    if sweep is None:
        return None
    ok = isinstance(sweep, dict) and all(isinstance(p, list) for p in sweep.values())
    points: dict[str, list[dict[str, Any]]] = {}
    for name, pts in (sweep.items() if ok else ()):
        points[name] = []
        for p in pts:
            if not isinstance(p, dict):
                ok = False
                break
            q = dict(p)
            for key in ("epsilon", "mean", "std", "user_epsilon"):
                v = _number(q.get(key))
                ok = ok and _is_number(v)
                q[key] = v
            points[name].append(q)
    if not ok:
        raise ResultsFolderError(f"{path}: eps_sweep is not a list of points (epsilon, mean, "
                                 "std, user_epsilon) per system; rerun `dprec compare`, or "
                                 "move the file out")
    return points


def _dataset_name(doc: dict[str, Any]) -> str:
    ds = doc.get("dataset")
    return str(ds.get("name", "")) if isinstance(ds, dict) else str(ds or "")


def _comparison(folder: Path, root: Path) -> ResultSet:
    path = folder / COMPARISON_FILE
    doc = _load_json(path, root)
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), dict):
        raise ResultsFolderError(f"{path}: no 'results' table; it is not the results.json of "
                                 "`dprec compare`. Rerun it, or move the file out")
    results = {str(n): _check_run(r, path) for n, r in doc["results"].items()}
    failed = doc.get("failed") or {}
    recorded = doc.get("eps_sweep_metric")
    metric = ((str(recorded.get("metric")), str(recorded.get("protocol")))
              if isinstance(recorded, dict) else None)
    return ResultSet(str(folder.relative_to(root)), "comparison", str(doc.get("dataset", "")),
                     results, _check_sweep(doc.get("eps_sweep"), path),
                     {str(k): str(v) for k, v in dict(failed).items()}, sweep_metric=metric)


def _stopped_comparison(folder: Path, root: Path) -> ResultSet:
    """A comparison that stopped before results.json: its saved systems and status.json."""
    status = _load_json(folder / "status.json", root)
    status = status if isinstance(status, dict) else {}
    results = {}
    for f in sorted((folder / "systems").glob("*.json")):
        doc = _check_run(_load_json(f, root), f)
        results[doc["system"]] = doc
    dataset = _dataset_name(next(iter(results.values()))) if results else ""
    failed = status.get("failed") if isinstance(status.get("failed"), dict) else {}
    stopped = status.get("stopped")
    return ResultSet(str(folder.relative_to(root)), "comparison (stopped early)", dataset,
                     results, None, {str(k): str(v) for k, v in failed.items()},
                     None if stopped is None else str(stopped))


def _runs(folder: Path, root: Path, skipped: list[tuple[str, str]]) -> list[ResultSet]:
    """The run files of ``folder`` as one set (none: an empty list); any other valid JSON
    file (an experiment's summary, a file of another shape) is added to ``skipped`` with
    why. A file that is not JSON at all is an error (:func:`_load_json`)."""
    runs: dict[str, dict[str, Any]] = {}
    for f in sorted(folder.glob("*.json")):
        doc = _load_json(f, root)
        try:
            runs[f.stem] = _check_run(doc, f)
        except ResultsFolderError as e:
            why = str(e).removeprefix(f"{f}: ").split(";")[0]
            skipped.append((str(f.relative_to(root)), f"not a run or comparison result ({why})"))
    if not runs:
        return []
    return [ResultSet(str(folder.relative_to(root)), "runs",
                      _dataset_name(next(iter(runs.values()))), runs)]


def _figure(path: Path, root: Path) -> Figure | str:
    """The PNG at ``path``, or why it is left out."""
    from matplotlib.image import imread
    if path.stat().st_size > MAX_FIGURE_BYTES:
        return f"larger than {MAX_FIGURE_BYTES // 1_000_000} MB"
    data = path.read_bytes()
    if not data.startswith(_PNG_SIGNATURE):
        return "not a PNG file"
    try:
        imread(io.BytesIO(data), format="png")
    except Exception:  # noqa: BLE001 - any decoder failure means a broken image
        return "a PNG that does not decode (truncated or corrupt)"
    return Figure(str(path.relative_to(root)), data)


def read_results_folder(root: Path) -> ResultsFolderContents:
    """Every comparison, run file and figure under ``root`` (hidden folders, such as a
    comparison still being written, left out).

    Raises :class:`ResultsFolderError` for a missing folder, a corrupt or misshapen JSON
    file (naming it) and a folder with neither results nor figures.
    """
    root = Path(root)
    if not root.exists():
        raise ResultsFolderError(f"{root} does not exist; give the folder that `dprec compare "
                                 "--out` or `dprec run --out` wrote (default: results)")
    if not root.is_dir():
        raise ResultsFolderError(f"{root} is a file, not a folder; give the folder that "
                                 "holds it")
    folders = [root, *sorted(p for p in root.rglob("*") if p.is_dir())]
    folders = [f for f in folders
               if not any(part.startswith(".") for part in f.relative_to(root).parts)]
    sets: list[ResultSet] = []
    figures: list[Figure] = []
    skipped: list[tuple[str, str]] = []
    compared = {f for f in folders if (f / COMPARISON_FILE).is_file()
                or ((f / "status.json").is_file() and (f / "systems").is_dir())}
    for folder in folders:
        if folder.name == "systems" and folder.parent in compared:
            continue
        if folder in compared:
            done = (folder / COMPARISON_FILE).is_file()
            sets.append(_comparison(folder, root) if done else _stopped_comparison(folder, root))
        else:
            sets.extend(_runs(folder, root, skipped))
        for f in sorted(folder.glob("*.png")):
            if folder in compared and f.name in _COMPARISON_FIGURES:
                continue
            fig = _figure(f, root)
            if isinstance(fig, str):
                skipped.append((str(f.relative_to(root)), fig))
            else:
                figures.append(fig)
    if not sets and not figures:
        raise ResultsFolderError(
            f"{root} holds no results: no results.json of `dprec compare`, no result file of "
            "`dprec run`, no figure. Run one of them with --out pointing here, or give the "
            "folder they wrote")
    return ResultsFolderContents(root, sets, figures, skipped)
