"""experiments/baselines_full_ranking.py: cells of two runs merge into one file, the table
says where each config came from, and dpals rows are read from a targets file."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _load():
    spec = importlib.util.spec_from_file_location("baselines_full_ranking_script",
                                                  ROOT / "experiments" /
                                                  "baselines_full_ranking.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _cell(hr: float) -> dict:
    metrics = ("HR@10", "Recall@20", "NDCG@10", "MRR", "Coverage@10")
    return {"config": "no settings", "seeds": [0],
            "summary": {m: {"mean": hr, "std": 0.0, "ci95": None, "n": 1} for m in metrics}}


SUMMARY = {"users": 10, "items": 5, "interactions": 20}


def test_cells_of_two_runs_merge_in_the_file(tmp_path):
    script = _load()
    out = tmp_path / "t.json"
    first: dict = {"datasets": {}}
    second: dict = {"datasets": {}}  # read before the first run wrote anything
    script.save_cell(out, first, SUMMARY, "d", "cmd a", "popularity", _cell(0.1))
    script.save_cell(out, second, SUMMARY, "d", "cmd b", "mf-np", _cell(0.2))
    doc = json.loads(out.read_text())
    assert set(doc["datasets"]["d"]["cells"]) == {"popularity", "mf-np"}
    assert doc["datasets"]["d"]["commands"] == ["cmd a", "cmd b"]


def test_the_table_reads_dpals_rows_and_divides_by_als(tmp_path):
    script = _load()
    targets = tmp_path / "targets.json"
    targets.write_text(json.dumps({"cells": {
        "mf-np (tuned)": {"per_seed": [0.2], "summary": {"mean": 0.2}, "config": "x"},
        "dpals tuned, ε 8": {"per_seed": [0.1], "summary": {"mean": 0.1, "ci95": None},
                             "config": "tuned (c.toml)"}}}))
    doc = {"datasets": {"d": {"dataset": SUMMARY, "commands": ["cmd"],
                              "cells": {"mf-np": _cell(0.4), "popularity": _cell(0.1)}}},
           "notes": {"d": ["a note"]}}
    text = script.table(doc, {"d": targets})
    assert "| popularity | no settings | 0.1000 |" in text and "| 0.250 | 1 |" in text
    dpals = [r for r in text.splitlines() if r.startswith("| dpals tuned, ε 8")]
    assert len(dpals) == 1 and dpals[0].endswith("| 0.1000 | — | — | — | — | 0.250 | 1 |")
    assert "- a note" in text
    missing = script.table(doc, {"d": tmp_path / "absent.json"})
    assert "not yet in" in missing
