"""experiments/dpals_targets.py --merge: runs of some cells on some seeds joined by seed and
summarised again (mean, 95% t-interval), and refused where a seed repeats or a cell lacks one."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load():
    spec = importlib.util.spec_from_file_location("dpals_targets_script",
                                                  ROOT / "experiments" / "dpals_targets.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


targets = _load()


def _run(tmp_path: Path, name: str, seeds: list[int], cells: dict[str, list[float]]) -> Path:
    doc = {"dataset": {"name": "toy"}, "seeds": seeds, "command": f"run {name}",
           "date": "2026-11-29T15:00:00", "wall_s": 1.0,
           "cells": {lab: {"per_seed": v, "summary": {}, "wall_s": 2.0, "config": "c"}
                     for lab, v in cells.items()}}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_cells_are_joined_by_seed_and_summarised_again(tmp_path: Path) -> None:
    old = _run(tmp_path, "old", [0], {"als": [0.3], "dp": [0.2]})
    als = _run(tmp_path, "als", [2, 1], {"als": [0.5, 0.4]})
    dp1 = _run(tmp_path, "dp1", [1], {"dp": [0.3]})
    dp2 = _run(tmp_path, "dp2", [2], {"dp": [0.4]})
    doc = targets.merge([old, als, dp1, dp2])
    assert doc["seeds"] == [0, 1, 2]
    assert doc["cells"]["als"]["per_seed"] == [0.3, 0.4, 0.5]
    assert doc["cells"]["dp"]["per_seed"] == [0.2, 0.3, 0.4]
    summary = doc["cells"]["dp"]["summary"]
    assert summary["mean"] == pytest.approx(0.3)
    # std .1, t_{.975, 2} = 4.3027: half-width 4.3027 * .1 / sqrt(3)
    assert summary["ci95"] == pytest.approx(0.248414, abs=1e-5)
    assert doc["cells"]["als"]["wall_s"] == 4.0
    assert [m["file"] for m in doc["merged_from"]] == [str(p) for p in (old, als, dp1, dp2)]


def test_a_repeated_seed_or_a_missing_one_is_refused(tmp_path: Path) -> None:
    a = _run(tmp_path, "a", [0, 1], {"als": [0.3, 0.4]})
    again = _run(tmp_path, "again", [1], {"als": [0.4]})
    with pytest.raises(SystemExit, match="seed 1 twice"):
        targets.merge([a, again])
    short = _run(tmp_path, "short", [2], {"dp": [0.2]})
    with pytest.raises(SystemExit, match="cell .als. has seeds \\[0, 1\\], not \\[0, 1, 2\\]"):
        targets.merge([a, short])
