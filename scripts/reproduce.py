"""``make reproduce``: every seed's table and figure analogue that fits this machine.

Each :class:`Step` is one command (an experiment script or a ``dprec`` command) that writes
into its own scratch folder (``{out}``, under results/reproduce/, git-ignored); the files
its ``outputs`` globs match are copied, flattened, to docs/results/<folder>/<name>/ beside a
``command.json`` (the command, the UTC date, the commit, the wall time, the exit status) and
the tail of the step's output (``log.txt``). A file over :data:`MAX_FILE_BYTES` is made
smaller where that loses nothing a reader needs (JSON without indentation, a PNG with a
256-colour palette, then at half size) and is otherwise not copied and listed as left out. A
failing step (non-zero exit, a timeout, no output) is recorded as failed and the next step
runs; the run exits 1 at the end if any step failed. A step whose data set cannot be had here
(``needs``: ML-20M is not fetched, no network) is recorded as "needs the data", with what to
run, and is not a failure. After a ``ranking-table`` step that succeeded,
scripts/reproduction_tables.py rebuilds docs/REPRODUCTION.md's full-ranking table from its
results. docs/results/reproduce.json is the
run's summary: every step's status and wall time (a run of some steps with --only keeps the
others' entries).

Placeholders in a command: ``{py}`` this Python, ``{dprec}`` the dprec CLI beside it,
``{out}`` the step's scratch folder. Sizes are chosen so the whole list fits about 60 min on
2 cores (ML-100K and synthetic data only). To add a step, add one :class:`Step` to
:data:`STEPS`. Usage:
  .venv/bin/python scripts/reproduce.py [--only NAME ...] [--list] [--dry-run]
      [--scratch results/reproduce] [--docs docs/results]
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import resource
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from dprec.data.registry import missing_data
from dprec.evaluation.provenance import git_commit

__all__ = ["MAX_FILE_BYTES", "NEEDS_DATA", "STEPS", "Step", "StepResult", "expand", "main",
           "run_step", "run_steps", "shown", "shrink", "write_summary"]

ROOT = Path(__file__).resolve().parent.parent
MAX_FILE_BYTES = 50_000
"""A committed file's size limit (docs/results files must be small)."""
LOG_TAIL_LINES = 120
NEEDS_DATA = "needs the data"
"""The status of a step whose data set is not on this machine (not a failure)."""
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass(frozen=True)
class Step:
    """One table or figure analogue: ``argv`` writes into ``{out}``; the files matching
    ``outputs`` (globs relative to ``{out}``, ``**`` allowed) are kept in
    docs/results/<folder>/<name>/. ``folder`` is the seed (``000``..``004``) or a system."""

    name: str
    folder: str
    argv: tuple[str, ...]
    outputs: tuple[str, ...]
    about: str
    timeout_s: int = 1200
    needs: tuple[str, ...] = ()
    """Data sets the step reads that may be missing here (:func:`missing_data`)."""


def _compare(*extra: str) -> tuple[str, ...]:
    return ("{dprec}", "compare", "--dataset", "ml-100k", *extra, "--out", "{out}")


def _strong(dataset: str) -> tuple[str, ...]:
    """Strong generalisation on ``dataset`` (10,000 held-out users, Liang et al.'s): the
    baselines that fold a user in, ALS, and dpals at per-user eps 1 and 8."""
    return ("{dprec}", "compare", "--dataset", dataset, "--task", "strong:10000",
            "--seeds", "1", "--systems", "popularity,mf-np,dpals", "--eps-grid", "1,8",
            "--sweep-seeds", "1", "--out", "{out}")


COMPARE_FILES = ("*/compare-*/results.csv", "*/compare-*/*.png")

STEPS: tuple[Step, ...] = (
    Step("ranking-table", "003",
         _compare("--seeds", "3", "--configs", "configs/ml-100k",
                  "--systems", "random,popularity,lcf-ub,lcf-ap,lcf-sp,dplcf-ap,dplcf-sp,"
                  "dplcf-oue,dplcf-eb,bpr-mf,gmf,mf-np,ease,item-knn,fcf,fmf-ldp",
                  "--eps-grid", "0.5,1,2,3", "--sweep-seeds", "2"),
         COMPARE_FILES,
         "DPLCF paper Table 2 and FMF-LDP benchmark table analogue: leave-one-out (latest), "
         "full ranking first (top-K list metrics), then sampled (99 negatives) and full "
         "HR@K; eps sweep (scripts/reproduction_tables.py rebuilds REPRODUCTION.md's table)",
         timeout_s=2400),
    Step("dplcf-vs-users", "003",
         ("{py}", "experiments/dplcf_vs_users.py", "--users", "1000", "10000", "75000",
          "--seeds", "1", "--out", "{out}"),
         ("*.json", "*.png"),
         "DPLCF-SP vs LCF-SP as the number of users grows (synthetic, ML-100K-like)"),
    Step("fig2-eps-k", "000",
         ("{py}", "experiments/fmf_ldp_sweep.py", "--epsilons", "1", "2.5", "5",
          "--ks", "1", "10", "100", "--seeds", "1", "--random-check-seeds", "4",
          "--out", "{out}"),
         ("*.json", "*.png"),
         "FMF-LDP Figure 2 analogue: HR@10 over eps x k (ML-100K, random LOO)"),
    Step("fig3-curves", "000",
         ("{py}", "experiments/fmf_ldp_curves.py", "--datasets", "ml-100k", "--ks", "100",
          "--seeds", "1", "--out", "{out}"),
         ("*.json", "*.png"),
         "FMF-LDP Figure 3 analogue: HR@10 per epoch, FCF and FMF-LDP-100 (ML-100K)"),
    Step("fig4-grid-ml100k", "000",
         ("{py}", "experiments/fmf_ldp_grid.py", "--data", "ml-100k",
          "--users", "100", "300", "943", "--items", "300", "800", "1682",
          "--out", "{out}"),
         ("*.json", "*.png"),
         "FMF-LDP Figure 4 analogue on real data: ML-100K top users x top items by activity"),
    Step("rating-table", "001",
         _compare("--task", "rating", "--seeds", "1", "--folds", "5"),
         COMPARE_FILES,
         "Laplace-SVD / Laplace-RR-SVD (001) and DP-PNBM (004) baselines: 5-fold RMSE"),
    Step("ldp-svd-figs", "001",
         ("{py}", "experiments/ldp_svd_sweeps.py", "--folds", "2",
          "--eps1", "0.5", "1", "2", "3", "--grid-step", "1", "--out", "{out}"),
         ("*.json", "*.png"),
         "Laplace-RR-SVD Figures 2 and 3 and the equal-budget table (ML-100K, 2 folds)"),
    Step("pnbm-figs", "004",
         ("{py}", "experiments/pnbm_sweeps.py", "--folds", "2",
          "--epsilons", "0.1", "1", "10", "--neighbours", "100", "500", "900",
          "--out", "{out}"),
         ("*.json", "*.png"),
         "DP-PNBM Figures 3-5 analogues: RMSE against eps and Nk beside PCC/COS (2 folds)"),
    Step("privrec-table", "002",
         _compare("--task", "privrec", "--seeds", "1", "--configs", "configs/ml-100k-privrec",
                  "--systems", "random,popularity,fcf,privrec-cen,privrec,dp-privrec",
                  "--eps-grid", ""),
         COMPARE_FILES,
         "PrivRec Table 2 analogue: 80/20 users, on-device fine-tuning, Hits@5..30 "
         "against all unseen items (ML-100K, not ML-1M)"),
    Step("privrec-eps-table", "002",
         ("{py}", "experiments/privrec_sweeps.py", "--parts", "eps", "--out", "{out}"),
         ("*.json", "*.png"),
         "PrivRec Table 3: eps against q = M/N (z = 1, 1000 rounds, N = 4800), no training"),
    Step("privrec-table4", "002",
         ("{py}", "experiments/privrec_table4.py", "--out", "{out}",
          "--summary", "{out}/privrec_table4_frappe.md"),
         ("*.json", "*.md"),
         "PrivRec Table 4: the Frappe accountant (N = 760), accounting only, no data"),
    Step("hits-readings", "002",
         ("{py}", "experiments/privrec_hits_readings.py", "--systems", "privrec", "fcf",
          "dp-privrec", "--seeds", "1", "--out", "{out}",
          "--summary", "{out}/privrec_hits_readings.md"),
         ("*.json", "*.md"),
         "PrivRec Hits@K readings side by side on one trained model per system: per positive "
         "(the protocol's), per user, all held out, 99 sampled negatives, optimistic ties",
         timeout_s=2400),
    Step("privrec-clipping", "002",
         ("{py}", "experiments/privrec_clipping.py", "--gammas", "0.1", "0.4", "0.7", "0.9",
          "--clips", "0.1", "1", "20", "--rounds", "10", "--out", "{out}",
          "--summary", "{out}/privrec_clipping.md"),
         ("*.json", "*.md"),
         "DP-PrivRec adaptive clipping: Hits@20 over gamma x initial clip (10 rounds)"),
    Step("dplcf-neighbours", "003",
         ("{py}", "experiments/dplcf_neighbours.py", "--seeds", "3", "--out", "{out}",
          "--summary", "{out}/dplcf_neighbours.md"),
         ("*.json", "*.md"),
         "DPLCF Table 6 analogue: NDCG@5/10 against 20-50 neighbours (ML-100K)"),
    Step("pnbm-figure6", "004",
         ("{py}", "experiments/pnbm_figure6.py", "--x", "0.5", "1", "2", "--folds", "2",
          "--out", "{out}", "--summary", "{out}/pnbm_figure6.md"),
         ("*.json", "*.md", "*.png"),
         "DP-PNBM Figure 6: DPSGD- against DPPS-PNBM on the paper's axis and on the proved "
         "eps (why the paper's cannot be drawn honestly)"),
    Step("dpals-ml20m", "dpals", _strong("ml-20m:gt3.5:min5"), COMPARE_FILES,
         "The DPALS protocol (Chien et al., ICML 2021): ML-20M, ratings > 3.5, users with >= 5; "
         "strong generalisation, 10,000 held-out users folded in on the device; Recall@20/50, "
         "NDCG@100 against the per-user eps (needs `dprec data fetch ml-20m`)",
         timeout_s=14400, needs=("ml-20m",)),
    Step("dpals-ml20m-synthetic", "dpals", _strong("synth-137000x20000-10000000"),
         COMPARE_FILES,
         "dpals-ml20m's pipeline on a synthetic stand-in of ML-20M's size (137K users x 20K "
         "items, 10M interactions, the drift generator): time and memory at that scale",
         timeout_s=14400),
)


@dataclass
class StepResult:
    """What one step did: its status (ok, failed, timeout), exit code, wall time, the CPU
    time (user + system) of the command and its children, files."""

    name: str
    folder: str
    command: str
    status: str
    returncode: int | None
    wall_time_s: float
    cpu_time_s: float
    files: list[str]
    left_out: list[str]
    date: str

    def to_json(self) -> dict[str, object]:
        return dict(self.__dict__)


def _commit() -> str:
    head = git_commit(ROOT)
    if head is None:
        return "unknown"
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                           cwd=ROOT, capture_output=True, text=True).stdout.strip()
    return head + (" (plus uncommitted changes)" if dirty else "")


def expand(argv: tuple[str, ...], out: Path) -> list[str]:
    """The command with ``{py}``, ``{dprec}`` and ``{out}`` filled in."""
    py = sys.executable
    dprec = str(Path(py).with_name("dprec"))
    return [a.replace("{py}", py).replace("{dprec}", dprec).replace("{out}", str(out))
            for a in argv]


def shown(step: Step) -> str:
    """The step's command as a user types it from the repository root (the default scratch
    folder results/reproduce/<name> as ``{out}``)."""
    text = shlex.join(expand(step.argv, Path("results", "reproduce", step.name)))
    return text.replace(str(Path(sys.executable).with_name("dprec")), ".venv/bin/dprec") \
        .replace(sys.executable, ".venv/bin/python")


def _matches(scratch: Path, patterns: tuple[str, ...]) -> list[Path]:
    found: dict[Path, None] = {}
    for path in sorted(p for p in scratch.rglob("*") if p.is_file()):
        rel = path.relative_to(scratch).as_posix()
        if any(fnmatch.fnmatch(rel, pat) for pat in patterns):
            found[path] = None
    return list(found)


def shrink(path: Path, target: Path) -> str | None:
    """Write ``path`` to ``target`` in at most :data:`MAX_FILE_BYTES` bytes: a JSON file
    without indentation, a PNG with a 256-colour palette (then at half size); returns how it
    was shrunk, or None (nothing written) when that is not enough or the type is other."""
    if path.suffix == ".json":
        try:
            text = json.dumps(json.loads(path.read_text()), separators=(",", ":")) + "\n"
        except ValueError:  # not JSON after all: left out
            return None
        if len(text.encode()) <= MAX_FILE_BYTES:
            target.write_text(text)
            return "JSON without indentation"
    elif path.suffix == ".png":
        from PIL import Image  # matplotlib's dependency

        try:
            image = Image.open(path).convert("RGB")
        except OSError:  # not a readable PNG: left out
            return None
        for scale in (1, 2):
            small = image.resize((image.width // scale, image.height // scale)) \
                if scale > 1 else image
            small.quantize(colors=256).save(target, optimize=True)
            if target.stat().st_size <= MAX_FILE_BYTES:
                return "PNG, 256 colours" + (f", 1/{scale} size" if scale > 1 else "")
        target.unlink()
    return None


def run_step(step: Step, scratch_base: Path, docs: Path, cwd: Path = ROOT) -> StepResult:
    """Run one step and copy its outputs; never raises for a failing command."""
    scratch = scratch_base / step.name
    command = shown(step)
    date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    missing = [m for d in step.needs if (m := missing_data(d)) is not None]
    if missing:
        return _needs_data(step, docs, command, date, missing)
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    argv = expand(step.argv, scratch)
    print(f"\n=== {step.folder}/{step.name}: {command}", flush=True)
    start = time.monotonic()
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines: list[str] = []
    returncode: int | None
    try:
        proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, errors="replace",
                                env={**os.environ, "COLUMNS": "120"})
        deadline = start + step.timeout_s
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            lines.append(ANSI.sub("", line.rstrip("\n")))
            del lines[:-LOG_TAIL_LINES]
            if time.monotonic() > deadline:
                proc.kill()
                break
        returncode = proc.wait()
        status = ("timeout" if time.monotonic() > deadline
                  else "ok" if returncode == 0 else "failed")
    except OSError as e:
        returncode, status = None, "failed"
        lines.append(f"could not start: {e}")
    wall = time.monotonic() - start
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)

    target = docs / step.folder / step.name
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    files, left_out, shrunk = [], [], {}
    for path in _matches(scratch, step.outputs):
        size = path.stat().st_size
        if (target / path.name).exists():
            left_out.append(f"{path.relative_to(scratch)} (a kept file has the same name)")
            continue
        if size > MAX_FILE_BYTES:
            how = shrink(path, target / path.name)
            if how is None:
                left_out.append(f"{path.relative_to(scratch)} ({size} bytes > {MAX_FILE_BYTES})")
                continue
            shrunk[path.name] = how
        else:
            shutil.copy2(path, target / path.name)
        files.append(path.name)
    if status == "ok" and not files:
        status = "failed"
        lines.append(f"no output matched {list(step.outputs)}")
    (target / "log.txt").write_text("\n".join(lines)[-MAX_FILE_BYTES // 2:] + "\n")
    result = StepResult(step.name, step.folder, command, status, returncode, round(wall, 1),
                        round(cpu, 1), files, left_out, date)
    (target / "command.json").write_text(json.dumps(
        {**result.to_json(), "shrunk": shrunk, "about": step.about, "commit": _commit(),
         "scratch": str(scratch.relative_to(cwd) if scratch.is_relative_to(cwd) else scratch)},
        indent=2) + "\n")
    print(f"--- {step.folder}/{step.name}: {status} in {wall:.0f} s ({cpu:.0f} CPU-s) "
          f"({len(files)} files kept{', ' + str(len(left_out)) + ' left out' if left_out else ''})",
          flush=True)
    return result


def _needs_data(step: Step, docs: Path, command: str, date: str,
                missing: list[str]) -> StepResult:
    """The record of a step not run because its data are not here: what to fetch or pass."""
    target = docs / step.folder / step.name
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    (target / "log.txt").write_text("\n".join(missing) + "\n")
    result = StepResult(step.name, step.folder, command, NEEDS_DATA, None, 0.0, 0.0, [], [],
                        date)
    (target / "command.json").write_text(json.dumps(
        {**result.to_json(), "about": step.about, "commit": _commit(), "needs": missing},
        indent=2) + "\n")
    print(f"--- {step.folder}/{step.name}: {NEEDS_DATA}: {'; '.join(missing)}", flush=True)
    return result


def write_summary(docs: Path) -> dict[str, object]:
    """docs/reproduce.json from the ``command.json`` of every step in :data:`STEPS` that has
    one (so runs of some steps, even side by side, add up), in the list's order."""
    entries = []
    for step in STEPS:
        try:
            meta = json.loads((docs / step.folder / step.name / "command.json").read_text())
        except (OSError, ValueError):
            continue
        entries.append({k: meta[k] for k in StepResult.__dataclass_fields__ if k in meta})
    doc = {
        "command": "make reproduce (.venv/bin/python scripts/reproduce.py)",
        "note": "wall times on a shared 2-core machine (other jobs running inflate them)",
        "steps": entries,
        "not_run": [s.name for s in STEPS if s.name not in {e["name"] for e in entries}],
        "total_wall_time_s": round(sum(float(e["wall_time_s"]) for e in entries), 1),
        "total_cpu_time_s": round(sum(float(e.get("cpu_time_s") or 0) for e in entries), 1),
    }
    docs.mkdir(parents=True, exist_ok=True)
    (docs / "reproduce.json").write_text(json.dumps(doc, indent=2) + "\n")
    return doc


def run_steps(steps: tuple[Step, ...] | list[Step], scratch: Path, docs: Path,
              cwd: Path = ROOT) -> list[StepResult]:
    """Every step in order (a failure does not stop the others), the summary rewritten
    after each one (:func:`write_summary`)."""
    results = []
    for step in steps:
        results.append(run_step(step, scratch, docs, cwd))
        write_summary(docs)
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="+", metavar="NAME", help="run these steps only")
    ap.add_argument("--list", action="store_true", help="list the steps and exit")
    ap.add_argument("--dry-run", action="store_true", help="print the commands only")
    ap.add_argument("--summary", action="store_true",
                    help="only rewrite docs/results/reproduce.json from the steps' files")
    ap.add_argument("--scratch", type=Path, default=ROOT / "results" / "reproduce")
    ap.add_argument("--docs", type=Path, default=ROOT / "docs" / "results")
    args = ap.parse_args(argv)
    names = [s.name for s in STEPS]
    unknown = sorted(set(args.only or []) - set(names))
    if unknown:
        ap.error(f"unknown step(s) {unknown}; the steps are {names}")
    steps = [s for s in STEPS if not args.only or s.name in args.only]
    if args.summary:
        doc = write_summary(args.docs)
        print(f"{len(doc['steps'])} steps, {doc['total_wall_time_s']} s; not run: "
              f"{doc['not_run']}")
        return 0
    if args.list or args.dry_run:
        for s in steps:
            cmd = shown(s) if args.dry_run else s.about
            print(f"{s.folder}/{s.name}: {cmd}")
        return 0
    start = time.monotonic()
    results = run_steps(steps, args.scratch, args.docs)
    print(f"\n{'step':<28} {'status':<8} {'wall (s)':>9} {'CPU (s)':>8}")
    for r in results:
        print(f"{r.folder + '/' + r.name:<28} {r.status:<8} {r.wall_time_s:>9.0f} "
              f"{r.cpu_time_s:>8.0f}")
    print(f"total {time.monotonic() - start:.0f} s (shared machine: other jobs inflate it)")
    if any(r.name == "ranking-table" and r.status == "ok" for r in results) and \
            args.docs.resolve() == (ROOT / "docs" / "results").resolve():
        subprocess.run([sys.executable, str(ROOT / "scripts" / "reproduction_tables.py")],
                       check=False)
    bad = [r.name for r in results if r.status not in ("ok", NEEDS_DATA)]
    if bad:
        print(f"FAILED: {', '.join(bad)} (see docs/results/<folder>/<step>/log.txt)")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
