"""experiments/privrec_hits_readings.py on Frappe (seed 002's Table 2 / Figure 4 data set):
read from a local path given by the user, a clear error when the path is missing; and
experiments/privrec_table4.py's Table 4 (N = 760)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from dprec.data.loaders import FRAPPE_COLUMNS
from dprec.errors import DataError

ROOT = Path(__file__).resolve().parents[2]


def _script(name: str):
    spec = importlib.util.spec_from_file_location(f"{name}_script",
                                                  ROOT / "experiments" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _write_frappe(folder: Path, n_users: int = 40, n_items: int = 80) -> Path:
    rng = np.random.default_rng(0)
    lines = ["\t".join(FRAPPE_COLUMNS)]
    for u in range(n_users):
        for i in rng.choice(n_items, 12, replace=False):
            lines.append("\t".join(map(str, (
                u, i, int(rng.integers(1, 9)), rng.choice(["morning", "night"]),
                rng.choice(["monday", "sunday"]), "workday", "home",
                rng.choice(["free", "paid"]), "sunny", "Spain", int(rng.integers(1, 4))))))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "frappe.csv").write_text("\n".join(lines) + "\n")
    return folder


def test_hits_readings_run_on_a_local_frappe(tmp_path, monkeypatch):
    data = _write_frappe(tmp_path / "frappe")
    out, summary = tmp_path / "out", tmp_path / "summary.md"
    monkeypatch.setattr(sys, "argv", [
        "privrec_hits_readings.py", "--dataset", "frappe", "--data-dir", str(data),
        "--systems", "popularity", "--negatives", "29", "--out", str(out),
        "--summary", str(summary)])
    _script("privrec_hits_readings").main()
    doc = json.loads((out / "hits_readings.json").read_text())
    assert doc["dataset"] == "frappe"
    [row] = doc["rows"]
    assert set(row["hits"]) == {"full", "full-per-user", "full-all-held-out", "sampled",
                                "full-optimistic-ties"}
    assert 0 <= row["hits"]["full"]["10"]["mean"] <= 1
    assert "frappe" in summary.read_text()


def test_frappe_without_its_folder_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", [
        "privrec_hits_readings.py", "--dataset", "frappe", "--data-dir",
        str(tmp_path / "missing"), "--systems", "popularity", "--out", str(tmp_path / "o"),
        "--summary", str(tmp_path / "s.md")])
    with pytest.raises(DataError, match="no frappe.csv in .*pass --data-dir PATH"):
        _script("privrec_hits_readings").main()
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_table4_reproduces_the_papers_accounting_and_gives_the_correct_one():
    rows = _script("privrec_table4").table4((2, 15))
    assert [r["M"] for r in rows] == [2, 2, 2, 15, 15, 15]
    for r in rows:
        assert r["reproduced"] == pytest.approx(r["paper"], rel=1e-4)
        assert r["rdp_without_replacement"] < r["paper"]


def test_verdict_names_the_readings_with_the_papers_magnitudes_and_order():
    mod = _script("privrec_hits_readings")
    keys = list(mod.HITS_READINGS.values())

    def row(system, values):
        return {"system": system,
                "hits": {k: {"10": {"mean": v}} for k, v in zip(keys, values, strict=True)}}

    # full: inverted; per-user: right order, 4x too high; all-held-out: right order and size
    privrec = row("privrec", [0.03, 0.64, 0.15, 0.2, 0.1])
    fcf = row("fcf", [0.35, 0.56, 0.13, 0.8, 0.4])
    v = {r["reading"]: r for r in mod.verdict([privrec, fcf])}
    assert not v["full"]["papers_ordering"] and v["full-per-user"]["papers_ordering"]
    assert v["full-all-held-out"]["privrec_over_paper"] == pytest.approx(0.15 / 0.160)
    text = "\n".join(mod._verdict([privrec, fcf]))
    assert "in the paper's order: full-all-held-out." in text
    assert mod.verdict([privrec]) == []
