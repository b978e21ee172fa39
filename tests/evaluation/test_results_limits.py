"""Strict JSON results, writes that keep both of two runs' files, runs whose size cannot fit
(issue 21)."""

from __future__ import annotations

import importlib
import json
import math

import numpy as np
import pytest
import scipy.sparse as sp

from dprec.data.dataset import Dataset
from dprec.errors import DprecError
from dprec.evaluation.ranking import RankingEvaluator
from dprec.evaluation.results import write_json, write_new_text
from dprec.evaluation.runner import Experiment
from dprec.evaluation.split import LeaveOneOutSplit
from dprec.systems.registry import make_system

synthetic_module = importlib.import_module("dprec.data.synthetic")


def test_write_json_is_strict(tmp_path):
    path = write_json(tmp_path / "r.json", {"a": math.nan, "b": [np.float32("inf"), 1.5]})
    text = path.read_text()
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(text) == {"a": "nan", "b": ["inf", 1.5]}


def test_write_new_text_never_overwrites_a_file_that_appeared(tmp_path):
    target = tmp_path / "c.toml"
    assert write_new_text(target, "first\n") == target
    second = write_new_text(target, "second\n")
    assert second == tmp_path / "c-1.toml"
    assert target.read_text() == "first\n" and second.read_text() == "second\n"
    assert write_new_text(target, "forced\n", overwrite=True) == target
    assert target.read_text() == "forced\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c-1.toml", "c.toml"]


def _one_item() -> Dataset:
    m = sp.csr_matrix(np.ones((4, 1), np.float32))
    return Dataset("one-item", m)


def test_a_run_with_nothing_to_evaluate_is_an_error():
    exp = Experiment(_one_item(), [0], LeaveOneOutSplit("random"), RankingEvaluator())
    with pytest.raises(DprecError, match=r"degenerate run: seed 0, fold 0 has no finite "
                                         r"sampled HR@"):
        exp.run(lambda: make_system("popularity"))


def test_a_billion_seeds_are_refused_before_the_list_is_built(monkeypatch):
    monkeypatch.setattr(synthetic_module, "machine_memory", lambda: 8 << 30)
    with pytest.raises(DprecError, match=r"1,000,000,000 seeds needs about 15,258\.8 GiB"):
        Experiment(_one_item(), range(10**9))


def test_a_run_whose_folds_cannot_fit_is_refused_before_any_fit(monkeypatch):
    ds = synthetic_module.synthetic(200, 100, 2000, rng=0, min_user_interactions=5)
    exp = Experiment(ds, range(1000), LeaveOneOutSplit("random"), RankingEvaluator(20))
    per_seed = exp.memory_estimate() / 1000
    assert per_seed > 2000 * 4  # at least the training matrix of a seed
    monkeypatch.setattr(synthetic_module, "machine_memory", lambda: 10 << 20)
    with pytest.raises(DprecError, match=r"1,000 seeds of synthetic-200x100 .* needs about"):
        exp.run(lambda: pytest.fail("a fit started"))
