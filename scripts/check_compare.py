"""Compare a `dprec compare` results.json with the stored copy made before the refactor.

Usage: .venv/bin/python scripts/check_compare.py results/ml-100k/compare-*/results.json
Systems run with a tuned config (``config_file`` in their result) are reported, not
compared: their settings changed on purpose. Metrics added since the copy (the full top-K
lists of issue 33) are not compared. Exit 1 if any other number differs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent.parent / "tests" / "golden" / \
    "ml100k_compare_0f6ea6e.json"
_NON_FINITE = {"inf": float("inf"), "-inf": float("-inf"), "nan": float("nan")}


def _read(path: Path) -> dict:
    """A results.json, its non-finite numbers as floats whether written as strict JSON text
    ("nan", "inf", "-inf") or, in files from before, as bare NaN / Infinity tokens."""
    def number(v: object) -> object:
        if isinstance(v, dict):
            return {k: number(x) for k, x in v.items()}
        if isinstance(v, list):
            return [number(x) for x in v]
        return _NON_FINITE[v] if isinstance(v, str) and v in _NON_FINITE else v
    return number(json.loads(Path(path).read_text()))


def _recorded(per_seed: list[dict], golden: list[dict]) -> list[dict] | None:
    """The (protocol, metric) entries of ``per_seed`` the stored copy records: metrics added
    since (issue 33's full top-K lists) are not compared; a missing one differs."""
    if len(per_seed) != len(golden):
        return None
    return [{p: {m: seed.get(p, {}).get(m) for m in rec[p]} for p in rec}
            for seed, rec in zip(per_seed, golden, strict=True)]


def main(path: str) -> int:
    new = _read(Path(path))
    old = _read(GOLDEN)
    bad = 0
    for name, per_seed in old["per_seed"].items():
        res = new["results"].get(name)
        if res is None:
            print(f"{name}: not in the new results")
            continue
        if "config_file" in res:
            print(f"{name}: tuned config ({res['config_file']['path']}), not compared")
            continue
        same = _recorded(res["per_seed"], per_seed) == per_seed
        bad += not same
        print(f"{name}: {'identical' if same else 'DIFFERENT'} per-seed metrics")
    for name, pts in (old.get("eps_sweep") or {}).items():
        got = (new.get("eps_sweep") or {}).get(name)
        if got is None:
            continue
        same = [(p["epsilon"], p["mean"], p["std"]) for p in got] == [tuple(p) for p in pts]
        bad += not same
        print(f"sweep {name}: {'identical' if same else 'DIFFERENT'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
