"""scripts/reproduction_tables.py: docs/REPRODUCTION.md's full-ranking block is rebuilt from
the stored ranking-table results, full ranking first, every cell with its interval."""

from __future__ import annotations

import csv
import importlib.util
import json
import sys
from pathlib import Path

import pytest

from dprec.errors import DprecError

ROOT = Path(__file__).resolve().parents[2]


def _load():
    spec = importlib.util.spec_from_file_location("reproduction_tables",
                                                  ROOT / "scripts" / "reproduction_tables.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


tables = _load()
COMMAND = "dprec compare --dataset ml-100k --seeds 3 --out x"


def _step(tmp: Path, rows: list[dict[str, object]]) -> Path:
    (tmp / "command.json").write_text(json.dumps(
        {"command": COMMAND, "date": "2026-11-29 12:00 UTC", "commit": "abc1234"}))
    with (tmp / "results.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(dict.fromkeys(k for r in rows for k in r)))
        w.writeheader()
        w.writerows(rows)
    return tmp


def test_full_ranking_leads_with_every_list_metric(tmp_path):
    row = {"system": "dpals", "sampled HR@10": 0.5, "sampled HR@10 std": 0.01,
           "sampled HR@10 ci95": 0.0248, "paper ML-20M HR@10": "nan", "eps user": 1.0,
           "delta user": 1e-6}
    for m in tables.FULL_TOPK:
        row |= {f"full-topk {m}": 0.2, f"full-topk {m} std": 0.0, f"full-topk {m} ci95": 0.01}
    lines = tables.block(_step(tmp_path, [row, {**row, "system": "random", "eps user": ""}]))
    head = next(x for x in lines if x.startswith("| system |"))
    assert head.index("HR@10 (full ranking)") < head.index("Coverage@10 (full ranking)") \
        < head.index("HR@10 sampled (99 negatives)")
    assert "| dpals | 0.2000 ± 0.0100 |" in "\n".join(lines)
    assert lines[-1] == tables.END and lines[0] == tables.BEGIN
    assert any(x.startswith("| dpals |") and x.endswith("| 0.5000 ± 0.0248 | — | 1 (1e-06) |")
               for x in lines)
    assert any(x.startswith("| random |") and x.endswith("non-private |") for x in lines)


def test_an_older_step_falls_back_to_random_ties_and_says_so(tmp_path):
    # 3 seeds, std 0.01: t_{.975,2} 0.01 / sqrt 3 = 0.0248
    row = {"system": "mf-np", "full HR@10": 0.09, "full HR@10 std": 0.01,
           "full NDCG@10": 0.04, "full NDCG@10 std": 0.0, "sampled HR@10": 0.6,
           "sampled HR@10 std": 0.01, "paper ML-20M HR@10": 0.8179, "eps user": ""}
    text = "\n".join(tables.block(_step(tmp_path, [row])))
    assert "predates the top-K list metrics" in text
    assert "| mf-np | 0.0900 ± 0.0248 | 0.0400 ± 0.0000 | 0.6000 ± 0.0248 | 0.8179 |" in text


def test_the_block_is_replaced_between_its_markers_only(tmp_path):
    doc = f"before\n{tables.BEGIN}\nold\n{tables.END}\nafter\n"
    assert tables.replace_block(doc, ["new"]) == "before\nnew\nafter\n"
    with pytest.raises(DprecError, match="markers once each"):
        tables.replace_block("no markers", ["new"])
    with pytest.raises(DprecError, match="no rows"):
        tables.block(_step(tmp_path, []))


def test_the_committed_document_matches_its_stored_results():
    assert tables.main(["--check"]) == 0
