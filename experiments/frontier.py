"""Issue 24 §3: the HR@10 / per-user ε frontier of every private ranking system.

Full ranking first (issue 33 §1): HR@10, Recall@20 and NDCG@10 of each test user's top
list over every unseen item against ε_user (MRR and Coverage@10 beside them at ε_user 1 and
8), then sampled HR@10 (99 negatives) and full HR@10 with random ties (issue 24's column).
ε_user is the per-user ε (all of one user's data, the tightest sound analysis each system's
privacy report gives, δ = 1e-6) on one privacy axis, zero-out (issue 33 §5; the local-DP
systems' replace-one ε is a sound zero-out bound, :mod:`dprec.privacy.relations`). Non-private
popularity, ALS (mf-np), EASE (each tuned where ``configs/<dataset>/<system>.toml`` exists),
random and, on ``synthetic-*`` data, the generator's oracle (a ceiling,
:mod:`dprec.evaluation.oracle`) are horizontal lines and reference rows. A system with files
tuned per ε (``configs/<dataset>/<system>/eps<E>.toml``, each with its ``epsilon``: dpals)
runs at each ε_user from the file tuned at the nearest ε (in log ε; a tie goes to the smaller
ε), and its provenance says at which ε that file was tuned. Each system runs
at the per-user ε of :data:`USER_EPSILONS`, and each seed system
also at its own paper setting (:data:`PAPER_POINTS`: ε per bit or per report as published),
placed at the per-user ε its report accounts.

ε_user -> the system's ``epsilon``: dp-pop, ldp-pop, dpals and dp-fedavg take the per-user ε
itself (their noise is calibrated to it). The DPLCF family, the flipped-data baselines and
FMF-LDP take ε per bit or per report; :func:`calibrate` searches that ε (secant in log-log,
kept inside a bracket) until the accounted per-user ε of a seed-0 fit lies in
[(1 - tol) ε_user, ε_user]. Systems that flip the same bits the same way share one search
(:data:`CALIBRATE_AS`); every cell still records its own accounted ε and flags one above
its target. The ``dprec compare`` ε sweep goes the other way (mechanism ε in, per-user ε
read from the report: :func:`dprec.evaluation.compare.level_epsilon`, reused here).

Resumable: every (system, ε, seed) cell is one JSON under
``results/frontier/<dataset>/cells/``; a cell whose file exists is loaded, not rerun. A cell
file whose config differs from the one asked for is an error (``--force`` reruns and
rewrites it, saying so). Outputs: ``frontier.json``, ``frontier_full-topk.png``,
``frontier_sampled.png`` and ``frontier_full.png`` under ``results/frontier/<dataset>/``,
and the summary table ``docs/results/frontier_<dataset>.md`` (command and date at the top).

Usage: nice -n 10 .venv/bin/python experiments/frontier.py --dataset ml-100k --seeds 3
       [--systems dpals,popularity,...] [--user-eps 0.5 1 2 4 8 16] [--no-paper-points]
       [--seeds-of LABEL=N ...] [--references random,popularity,mf-np] [--note TEXT ...]
       [--out results/frontier] [--docs docs/results] [--configs configs/ml-100k] [--force]
"""

from __future__ import annotations

import argparse
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from dprec.data.registry import load_dataset, split_filters
from dprec.errors import DprecError
from dprec.evaluation.compare import level_epsilon
from dprec.evaluation.frontier_summary import AXIS, axis_guarantee, summary_markdown
from dprec.evaluation.frontier_summary import METRIC as _METRIC
from dprec.evaluation.frontier_summary import PROTOCOLS as _PROTOCOLS
from dprec.evaluation.frontier_summary import targets as _targets
from dprec.evaluation.intervals import summarise
from dprec.evaluation.metrics import FULL_LIST, HEADLINE
from dprec.evaluation.oracle import OracleConfig, OracleRanker
from dprec.evaluation.plots import plot_metric_vs_eps
from dprec.evaluation.provenance import git_commit, run_command, utc_date
from dprec.evaluation.runner import Experiment, RunResult
from dprec.privacy.calibrate import Calibration, calibrate_to_target
from dprec.privacy.events import strict_json
from dprec.systems.registry import make_config, make_system, parse_label, read_config, spec

__all__ = [
    "CALIBRATE_AS", "DELTA", "ORACLE", "PAPER_POINTS", "REFERENCES", "SYSTEMS", "TOLERANCE",
    "USER_EPSILONS", "Calibration", "Frontier", "calibrate", "main", "nearest_tuned",
    "start_epsilon", "summary_markdown",
]

USER_EPSILONS = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
ORACLE = "oracle"
DELTA = 1e-6
SYSTEMS = (
    "lcf-sp", "lcf-ap", "dplcf-sp", "dplcf-ap", "dplcf-oue", "dplcf-eb", "bpr-mf", "gmf",
    "fmf-ldp", "ldp-pop", "dp-pop", "dpals[weighting=uniform]", "dpals[weighting=tail]",
    "dpals[weighting=adaptive]", "dp-fedavg",
)
"""Every private ranking system of the leave-one-out protocol (dp-privrec runs on the
PrivRec user split and is not on this plot)."""
REFERENCES = {"random": "random", "popularity": "popularity (non-private)",
              "mf-np": "ALS (mf-np, non-private)", "ease": "EASE (non-private)",
              ORACLE: "oracle (the generator's scores, ceiling)"}
"""The reference lines; :data:`ORACLE` is added on every ``synthetic-*`` data set."""
PAPER_POINTS = ("lcf-sp", "lcf-ap", "dplcf-sp", "dplcf-ap", "dplcf-oue", "dplcf-eb", "bpr-mf",
                "gmf", "fmf-ldp")
"""The seed systems, also run at their paper setting (the default config: ε 1 per bit for
the DPLCF family and its flipped-data baselines, ε 2.5 per report, k 100, 20 epochs for
FMF-LDP)."""
CALIBRATE_AS = {"lcf-sp": "dplcf-sp", "dplcf-eb": "dplcf-sp", "bpr-mf": "dplcf-sp",
                "gmf": "dplcf-sp", "lcf-ap": "dplcf-ap"}
"""Systems whose users flip the same bits with the same flip as another, cheaper, system
(the same event log, so the same per-user ε at the same ε per bit): the ε search runs on
the latter. Each cell's own report is still read and checked against its target."""
TOLERANCE = 0.02
"""The ε search stops when the accounted per-user ε is in [(1 - TOLERANCE) target, target]."""
MAX_PROBES = 12


def calibrate(target: float, probe: Callable[[float], float], start: float | None = None,
              tol: float = TOLERANCE, max_probes: int = MAX_PROBES) -> Calibration:
    """The mechanism ε whose per-user ε ``probe(ε)`` is in [(1 - tol) target, target]: the
    secant search of :func:`dprec.privacy.calibrate.calibrate_to_target` at this
    experiment's tolerance and probe budget."""
    return calibrate_to_target(target, probe, start, tol, max_probes)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.-]+", "_", text).strip("_")


def _write_new(path: Path, doc: object, force: bool) -> None:
    """Write strict JSON to ``path``; an existing file is rewritten only with ``force``."""
    if path.exists() and not force:
        raise DprecError(f"{path} exists; pass --force to rewrite it")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(strict_json(doc), indent=1, allow_nan=False) + "\n")
    tmp.replace(path)


class Frontier:
    """The cells of one data set: run on demand, stored one JSON each, loaded when present."""

    def __init__(self, dataset: str, seeds: Sequence[int], out: Path,
                 configs_dir: Path | None = None, force: bool = False,
                 console: Console | None = None,
                 seeds_of: dict[str, int] | None = None) -> None:
        self.dataset_name = dataset
        self.seeds = [int(s) for s in seeds]
        self.seeds_of = dict(seeds_of or {})
        self.root = out / _slug(dataset)
        self.force = force
        self.console = console or Console(stderr=True)
        self.tuned = _tuned_files(configs_dir)
        self.tuned_at = _tuned_per_epsilon(configs_dir)
        self._dataset: Any = None
        self._experiments: dict[int, Experiment] = {}
        self.ran = 0
        self.loaded = 0

    def label_seeds(self, label: str) -> list[int]:
        """The seeds of ``label``: the first ``seeds_of[label]`` seeds, else all."""
        return self.seeds[:self.seeds_of.get(label, len(self.seeds))]

    def experiment(self, seed: int) -> Experiment:
        if self._dataset is None:
            self._dataset = load_dataset(self.dataset_name)
        if seed not in self._experiments:
            self._experiments[seed] = Experiment(self._dataset, [seed])
        return self._experiments[seed]

    def config(self, label: str, paper: bool = False,
               target: float | None = None) -> tuple[Any, str]:
        """(config, provenance) of ``label``: at a per-user ε ``target``, the file tuned at
        the nearest ε (:func:`nearest_tuned`) where its system has files tuned per ε; else
        the tuned file of its system if any, else the system's defaults (its paper setting
        with ``paper``); the label's own settings on top. The oracle's: its data set."""
        if label == ORACLE:
            return OracleConfig(self.dataset_name), "the generator's own scores (no fit)"
        name, own = parse_label(label)
        cf = self.tuned.get(name)
        if paper:
            return make_config(name, own, spec(name).paper_config()), "paper setting"
        if target is not None and self.tuned_at.get(name):
            at, cf = nearest_tuned(self.tuned_at[name], target)
            run_at = "" if at == target else f", run at ε {target:g}"
            return (make_config(name, own, make_config(name, cf.params)),
                    f"{cf.origin} at ε {at:g} ({cf.path}{run_at})")
        if cf is None:
            return make_config(name, own), "untuned (system defaults)"
        base = make_config(name, cf.params)
        at = f" at ε {cf.params['epsilon']}" if "epsilon" in cf.params else ""
        return make_config(name, own, base), f"{cf.origin} ({cf.path}{at})"

    def make(self, label: str, config: Any) -> Any:
        """A fresh system of ``label`` at ``config``; the oracle scores with the data set's
        generator (:class:`~dprec.evaluation.oracle.OracleRanker`)."""
        if label == ORACLE:
            ds = self.experiment(self.seeds[0]).dataset
            return OracleRanker(config, ds.user_ids, ds.item_ids)
        return make_system(parse_label(label)[0], config=config)

    def _known_probes(self, proxy: str, base_json: object) -> list[tuple[float, float]]:
        """Every stored probe of ``proxy``'s ε searches with this config (other targets)."""
        out: list[tuple[float, float]] = []
        for path in (self.root / "calibration").glob(f"{_slug(proxy)}-eps*.json"):
            doc = json.loads(path.read_text())
            if doc["config"] == base_json:
                out += [(float(e), float(u)) for e, u in doc["probes"]]
        return out

    def cell_path(self, label: str, kind: str, target: float | None, seed: int) -> Path:
        where = kind if target is None else f"{kind}-eps{target:g}"
        return self.root / "cells" / _slug(label) / where / f"seed{seed}.json"

    def cell(self, label: str, kind: str, target: float | None, seed: int, config: Any,
             provenance: str, result: RunResult | None = None,
             calibration: dict[str, object] | None = None) -> dict[str, Any]:
        """The stored cell, or (absent, or ``force``) a fresh run of ``config`` (``result``:
        a run already made, e.g. by the ε search) written to its file."""
        path = self.cell_path(label, kind, target, seed)
        want = strict_json(asdict(config))
        if path.exists() and not self.force:
            doc = json.loads(path.read_text())
            if doc["config"] != want:
                raise DprecError(f"{path} holds a run of another config ({doc['config']}, "
                                 f"asked {want}); pass --force to rerun it, or --out elsewhere")
            self.loaded += 1
            return doc
        if path.exists():
            self.console.print(f"[yellow]--force: rewriting {path}[/]")
        if result is None:
            result = self.experiment(seed).run(lambda: self.make(label, config))
        doc = _cell_doc(label, kind, target, seed, config, provenance, result, calibration)
        doc["dataset"] = self.dataset_name
        _write_new(path, doc, force=True)
        self.ran += 1
        return doc

    def calibration(self, label: str, target: float) -> tuple[Calibration, str,
                                                               RunResult | None]:
        """The mechanism ε of ``label`` at per-user ``target`` (stored, or searched on seed
        0 with the system of :data:`CALIBRATE_AS`); the searched system's run at the chosen
        ε when it is ``label`` itself (that run is then the seed-0 cell)."""
        name, own = parse_label(label)
        proxy = CALIBRATE_AS.get(name, label)
        path = self.root / "calibration" / f"{_slug(proxy)}-eps{target:g}.json"
        base, _ = self.config(proxy, target=target)
        base_json = strict_json({k: v for k, v in asdict(base).items() if k != "epsilon"})
        if path.exists() and not self.force:
            doc = json.loads(path.read_text())
            if doc["config"] != base_json:
                raise DprecError(f"{path} holds the epsilon search of another config "
                                 f"({doc['config']}, asked {base_json}); pass --force to "
                                 "redo it, or --out elsewhere")
            cal = Calibration(doc["target"], doc["epsilon"], doc["user_epsilon"],
                              [tuple(p) for p in doc["probes"]])
            return cal, proxy, None
        if path.exists():
            self.console.print(f"[yellow]--force: redoing {path}[/]")
            path.unlink()
        runs: dict[float, RunResult] = {}
        proxy_name = parse_label(proxy)[0]

        def probe(eps: float) -> float:
            cfg = make_config(proxy_name, {"epsilon": eps}, base)
            res = self.experiment(self.seeds[0]).run(
                lambda: make_system(proxy_name, config=cfg))
            runs[eps] = res
            return level_epsilon(res.privacy, "user")

        cal = calibrate(target, probe, start_epsilon(target, self._known_probes(proxy,
                                                                                 base_json)))
        _write_new(path, {"system": proxy, "dataset": self.dataset_name, "config": base_json,
                          **asdict(cal)}, force=True)
        return cal, proxy, runs[cal.epsilon] if proxy == label else None


def start_epsilon(target: float, known: Sequence[tuple[float, float]],
                  tol: float = TOLERANCE) -> float:
    """Where the ε search for ``target`` starts, given the (ε, per-user ε) probes ``known``
    from the same system's other targets: at ``target`` itself when there are none or every
    one had per-user ε = ε (a system calibrated to the per-user ε); else interpolated in
    log-log between the nearest probes on either side (slope 1 from the nearest when the
    target is outside them)."""
    if not known or all((1 - tol) <= u / e <= 1 for e, u in known):
        return target
    aim = target * (1 - tol / 2)
    below = [p for p in known if 0 < p[1] < aim]
    above = [p for p in known if p[1] > aim and math.isfinite(p[1])]
    if below and above:
        (e0, u0), (e1, u1) = max(below, key=lambda p: p[1]), min(above, key=lambda p: p[1])
        if e1 > e0:
            t = math.log(aim / u0) / math.log(u1 / u0)
            return math.exp(math.log(e0) + t * math.log(e1 / e0))
    e, u = min(known, key=lambda p: abs(math.log(p[1] / aim)) if p[1] > 0 else math.inf)
    return e * aim / u


def _tuned_files(configs_dir: Path | None) -> dict[str, Any]:
    if configs_dir is None or not configs_dir.is_dir():
        return {}
    return {cf.system: cf for cf in map(read_config, sorted(configs_dir.glob("*.toml")))}


def _tuned_per_epsilon(configs_dir: Path | None) -> dict[str, dict[float, Any]]:
    """``configs_dir/<system>/*.toml``: each system's files tuned per ε, by their ε."""
    out: dict[str, dict[float, Any]] = {}
    if configs_dir is None or not configs_dir.is_dir():
        return out
    for path in sorted(configs_dir.glob("*/*.toml")):
        cf = read_config(path)
        if cf.system != path.parent.name or "epsilon" not in cf.params:
            raise DprecError(f"{path}: a file tuned per ε must be a {path.parent.name} config "
                             "with its epsilon in [config]")
        eps = float(cf.params["epsilon"])
        if eps in out.setdefault(cf.system, {}):
            raise DprecError(f"{path} and {out[cf.system][eps].path} are both tuned at "
                             f"ε {eps:g}: keep one")
        out[cf.system][eps] = cf
    return out


def nearest_tuned(files: dict[float, Any], target: float) -> tuple[float, Any]:
    """The (ε, file) of ``files`` tuned nearest to ``target`` in log ε (distances equal to
    9 decimals are a tie); a tie goes to the smaller ε (the more private setting)."""
    at = min(files, key=lambda e: (round(abs(math.log(e / target)), 9), e))
    return at, files[at]


def _cell_doc(label: str, kind: str, target: float | None, seed: int, config: Any,
              provenance: str, result: RunResult,
              calibration: dict[str, object] | None) -> dict[str, Any]:
    privacy = result.privacy or {}
    user = (privacy.get("levels") or {}).get("user") or {}
    return {
        "system": label, "kind": kind, "seed": seed, "target_user_epsilon": target,
        "config": strict_json(asdict(config)), "config_provenance": provenance,
        "mechanism_epsilon": getattr(config, "epsilon", None),
        "user_epsilon": level_epsilon(privacy, "user") if privacy else None,
        "user_delta": user.get("delta"), "sides": user.get("sides"), "model": user.get("model"),
        "adjacency": privacy.get("adjacency"),
        "over_target": bool(target is not None and privacy
                            and level_epsilon(privacy, "user") > target * (1 + 1e-9)),
        "calibration": calibration,
        "metrics": {p: {m: result.per_seed[0][p][m]
                        for m in (HEADLINE if p == FULL_LIST else (_METRIC,))}
                    for p in _PROTOCOLS if p in result.per_seed[0]},
        "wall_time_s": result.wall_time_s,
    }


def _summary(cells: list[dict[str, Any]], proto: str, metric: str) -> dict[str, Any] | None:
    """Mean, std, 95% interval and n of ``metric`` over the cells; None when a cell lacks
    it (stored before the metric existed: rerun it with --force)."""
    values = [c["metrics"].get(proto, {}).get(metric) for c in cells]
    return None if any(v is None for v in values) else summarise(values)


def _point(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """One frontier point from its seeds' cells: mean, std and 95% interval of each
    protocol's HR@10 (and of every headline metric of the full top-K lists), the largest
    accounted per-user ε and δ (the report that holds for every seed's model), and that
    guarantee on the one privacy axis (:data:`AXIS`: ``axis_epsilon``, ``axis_delta``; None
    where there is no sound conversion)."""
    first = cells[0]
    users = [c["user_epsilon"] for c in cells if c["user_epsilon"] is not None]
    deltas = [c["user_delta"] for c in cells if c["user_delta"] is not None]
    axis = axis_guarantee(max(users) if users else None, max(deltas) if deltas else None,
                          first["adjacency"])
    return {
        "kind": first["kind"], "target_user_epsilon": first["target_user_epsilon"],
        "user_epsilon": max(users) if users else None,
        "user_delta": max(deltas) if deltas else None,
        "mechanism_epsilon": first["mechanism_epsilon"], "sides": first["sides"],
        "model": first["model"], "adjacency": first["adjacency"],
        "axis_epsilon": axis[0] if axis else None, "axis_delta": axis[1] if axis else None,
        "config_provenance": first["config_provenance"] if first["config"] else "no settings",
        "calibration": first["calibration"],
        "over_target": any(c["over_target"] for c in cells),
        "seeds": [c["seed"] for c in cells],
        **{p: _summary(cells, p, _METRIC) for p in _PROTOCOLS},
        "headline": {m: _summary(cells, FULL_LIST, m) for m in HEADLINE},
    }


def run_frontier(frontier: Frontier, systems: Sequence[str], user_eps: Sequence[float],
                 references: Sequence[str], paper_points: bool) -> dict[str, Any]:
    """Every cell (run or loaded) and the frontier document built from them."""
    paper = [s for s in systems if parse_label(s)[0] in PAPER_POINTS] if paper_points else []
    n = sum(len(frontier.label_seeds(r)) for r in references) + sum(
        len(frontier.label_seeds(s)) * (len(user_eps) + (s in paper)) for s in systems)
    points: dict[str, list[dict[str, Any]]] = {}
    refs: dict[str, dict[str, Any]] = {}
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=frontier.console) as bar:
        task = bar.add_task("frontier", total=n)

        def seeds(label: str, kind: str, target: float | None, config: Any, prov: str,
                  first: RunResult | None = None,
                  calibration: dict[str, object] | None = None) -> list[dict[str, Any]]:
            out = []
            for i, seed in enumerate(frontier.label_seeds(label)):
                bar.update(task, description=f"{label} {kind} ε={target}, seed {seed}")
                out.append(frontier.cell(label, kind, target, seed, config, prov,
                                         first if i == 0 else None, calibration))
                bar.advance(task)
            return out

        for name in references:
            cfg, prov = frontier.config(name)
            refs[name] = {"label": REFERENCES.get(name, name), **_point(
                seeds(name, "reference", None, cfg, prov))}
        for label in systems:
            points[label] = []
            name = parse_label(label)[0]
            for target in user_eps:
                base, prov = frontier.config(label, target=float(target))
                bar.update(task, description=f"{label}: the ε of ε_user={target}")
                cal, proxy, first = frontier.calibration(label, float(target))
                cfg = make_config(name, {"epsilon": cal.epsilon}, base)
                cal_doc = {"searched_with": proxy, "user_epsilon": cal.user_epsilon,
                           "probes": len(cal.probes)}
                points[label].append(_point(seeds(label, "frontier", float(target), cfg,
                                                  prov, first, cal_doc)))
            if label in paper:
                cfg, prov = frontier.config(label, paper=True)
                points[label].append(_point(seeds(label, "paper", None, cfg, prov)))
    return {"references": refs, "systems": points}


def build_document(result: dict[str, Any], args: argparse.Namespace, command: str,
                   provenance: str) -> dict[str, Any]:
    doc = {"dataset": args.dataset, "command": command, "date": utc_date(),
           "commit": git_commit(), "seeds": args.seeds, "seeds_of": args.seeds_of, "delta": DELTA,
           "user_epsilons": [float(e) for e in args.user_eps], "metric": _METRIC,
           "axis": AXIS.value,
           "provenance": provenance, "notes": list(args.note), **result}
    doc["targets"] = _targets(doc)
    return doc


def save(doc: dict[str, Any], root: Path, docs: Path | None, console: Console) -> list[Path]:
    """frontier.json and the two PNGs under ``root``, the Markdown summary under ``docs``;
    an existing file is replaced only after saying so (they are rebuilt from the cells)."""
    root.mkdir(parents=True, exist_ok=True)
    paths = [root / "frontier.json"]
    for p in [paths[0], *([docs / f"frontier_{_slug(doc['dataset'])}.md"] if docs else [])]:
        if p.exists():
            console.print(f"rewriting {p} (rebuilt from the stored cells)")
    paths[0].write_text(json.dumps(strict_json(doc), indent=1, allow_nan=False) + "\n")
    for proto in _PROTOCOLS:
        if not all(p.get(proto) for pts in [*doc["systems"].values(),
                                             list(doc["references"].values())] for p in pts):
            continue  # cells stored before the metric existed
        paths.append(_plot(doc, proto, root / f"frontier_{proto}.png"))
    if docs is not None:
        docs.mkdir(parents=True, exist_ok=True)
        paths.append(docs / f"frontier_{_slug(doc['dataset'])}.md")
        paths[-1].write_text(summary_markdown(doc))
    return paths


PLOT_LABELS = {FULL_LIST: "HR@10, full ranking (every unseen item)",
               "sampled": "HR@10, sampled (99 negatives)",
               "full": "HR@10, full ranking, random ties"}


def _plot(doc: dict[str, Any], proto: str, path: Path) -> Path:
    """HR@10 of ``proto`` against the per-user ε on the one privacy axis (bars: 95%
    interval over seeds, none for one seed), the references (the oracle a ceiling) as
    horizontal lines."""
    def bar(summary: dict[str, Any]) -> float:
        return float(summary.get("ci95") or 0.0)

    sweep = {label: [{"user_epsilon": _number(p["axis_epsilon"]), "mean": p[proto]["mean"],
                      "std": bar(p[proto]), "sides": p["sides"]} for p in
                     sorted(pts, key=lambda q: _number(q["axis_epsilon"]))]
             for label, pts in doc["systems"].items()}
    refs = {r["label"]: r[proto]["mean"] for r in doc["references"].values()}
    return plot_metric_vs_eps(
        sweep, path, f"{PLOT_LABELS[proto]}, {doc['dataset']}",
        ylabel=f"{PLOT_LABELS[proto].split(' (')[0]} (bars: 95% interval)", references=refs,
        x="user_epsilon", log_x=True, legend_outside=True,
        xlabel=f"per-user ε, {AXIS.describe()} (δ = {doc['delta']:g}; local-DP systems: "
               "their replace-one ε, an upper bound; log scale)")


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="ml-100k")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--systems", default=",".join(SYSTEMS),
                    help="comma-separated labels; a label may carry [KEY=VALUE;...]")
    ap.add_argument("--references", default=",".join(r for r in REFERENCES if r != ORACLE),
                    help="comma-separated; the oracle is added on synthetic-* data sets")
    ap.add_argument("--user-eps", type=float, nargs="+", default=list(USER_EPSILONS))
    ap.add_argument("--no-paper-points", action="store_true")
    ap.add_argument("--configs", type=Path, default=None,
                    help="folder of tuned TOML configs (default: configs/<dataset> if it exists)")
    ap.add_argument("--out", type=Path, default=Path("results/frontier"))
    ap.add_argument("--docs", type=Path, default=Path("docs/results"))
    ap.add_argument("--seeds-of", action="append", default=[], metavar="LABEL=N",
                    help="run LABEL on its first N seeds only (repeatable)")
    ap.add_argument("--note", action="append", default=[],
                    help="a line for the summary's head (repeatable)")
    ap.add_argument("--force", action="store_true", help="rerun and rewrite stored cells")
    args = ap.parse_args(argv)
    command = run_command("experiments/frontier.py", argv)
    configs = args.configs if args.configs is not None else Path("configs") / args.dataset
    systems = [s.replace(";", ",") for s in _labels(args.systems)]
    references = _labels(args.references)
    if split_filters(args.dataset)[0].lower().startswith("synthetic-") and \
            ORACLE not in references:
        references.append(ORACLE)
    for label in [*systems, *(r for r in references if r != ORACLE)]:
        if spec(parse_label(label)[0]).task != "ranking":
            raise DprecError(f"{label} is not a ranking system")
    console = Console(stderr=True)
    seeds_of = {}
    for item in args.seeds_of:
        label, eq, n = item.rpartition("=")
        if not eq or not n.isdigit() or not 1 <= int(n) <= args.seeds:
            raise DprecError(f"--seeds-of {item!r}: want LABEL=N with 1 <= N <= --seeds")
        seeds_of[label.replace(";", ",")] = int(n)
    frontier = Frontier(args.dataset, range(args.seeds), args.out, configs, args.force,
                        console, seeds_of)
    provenance = (f"a system's tuned TOML from {configs}/ where one exists (tuned on "
                  "validation with `dprec tune`; the privacy cost of tuning on the private "
                  "data is not accounted for in any privacy report), else its defaults, marked "
                  "untuned" + (f"; tuned files: {', '.join(sorted(frontier.tuned))}"
                               if frontier.tuned else "; no tuned files")
                  + "".join(f"; {name} tuned per ε at ε "
                            + ", ".join(f"{e:g}" for e in sorted(files))
                            + f" ({configs}/{name}/), each ε_user run from the nearest"
                            for name, files in sorted(frontier.tuned_at.items())))
    result = run_frontier(frontier, systems, args.user_eps, references,
                          not args.no_paper_points)
    doc = build_document(result, args, command, provenance)
    paths = save(doc, frontier.root, args.docs, console)
    console.print(f"{frontier.ran} cells run, {frontier.loaded} loaded; saved "
                  + ", ".join(map(str, paths)))
    return doc


def _number(value: float | None) -> float:
    return math.nan if value is None else float(value)


def _labels(text: str) -> list[str]:
    return [s.strip() for s in text.split(",") if s.strip()]


if __name__ == "__main__":
    main()
