"""The runner hands a system that asks for them (``uses_timestamps``) its training
interactions' times, and only those; a data set without timestamps is refused clearly."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp
from typer.testing import CliRunner

from dprec.cli import app
from dprec.data.registry import load_dataset
from dprec.errors import DprecError
from dprec.evaluation.runner import Experiment
from dprec.evaluation.split import LeaveOneOutSplit
from dprec.systems.registry import make_system


def _dataset():
    return load_dataset("synthetic-300x200")


def test_the_training_timestamps_are_the_train_entries_times_only():
    ds = _dataset()
    exp = Experiment(ds, [0])
    fold, _ = exp.folds(0)[0]
    train = exp.evaluator.train_matrix(fold, make_system("dp-pop"))
    ts = exp.train_timestamps(train, "dp-pop")
    assert ts.shape == train.shape
    assert np.array_equal(ts.astype(bool).toarray(), train.astype(bool).toarray()
                          & (_dense_times(ds) != 0))
    full = _dense_times(ds)
    on_train = train.toarray() != 0
    assert np.array_equal(ts.toarray()[on_train], full[on_train])
    assert not ts.toarray()[~on_train].any()  # the held-out items' times stay behind


def _dense_times(ds) -> np.ndarray:
    m = ds.matrix.tocsr()
    return sp.csr_matrix((ds.timestamps, m.indices, m.indptr), shape=m.shape).toarray()


def test_a_recency_system_gets_timestamps_and_a_uniform_one_does_not_ask():
    assert make_system("dp-pop", {"sampling": "recency"}).uses_timestamps
    assert not make_system("dp-pop").uses_timestamps
    assert not make_system("popularity").uses_timestamps
    with pytest.raises(DprecError, match="does not use timestamps"):
        make_system("popularity").set_timestamps(sp.csr_matrix((2, 2)))
    exp = Experiment(_dataset(), [0])
    res = exp.run(lambda: make_system("dp-pop", {"sampling": "recency", "k": 3}))
    assert len(res.per_seed) == 1 and res.parameters["sampling"] == "recency"


def test_a_dataset_without_timestamps_is_refused_for_a_recency_system():
    ds = _dataset()
    bare = replace(ds, timestamps=None)
    exp = Experiment(bare, [0], LeaveOneOutSplit("random"))
    with pytest.raises(DprecError, match="needs the interactions' timestamps.*has none"):
        exp.run(lambda: make_system("dp-pop", {"sampling": "recency"}))


def test_dprec_run_dp_pop_recency(tmp_path):
    args = ["run", "dp-pop", "--param", "sampling=recency", "--param", "k=5", "--seeds", "1",
            "--json", "--out", str(tmp_path)]
    res = CliRunner().invoke(app, [*args, "--dataset", "synthetic-300x200"])
    assert res.exit_code == 0, res.output[-3000:]
    doc = json.loads(res.stdout.strip().splitlines()[-1])
    assert doc["parameters"]["sampling"] == "recency"
    csv = tmp_path / "bare.csv"
    csv.write_text("user,item\n" + "".join(f"{u},{i}\n" for u in range(30)
                                          for i in range(u % 7, 200, 3)))
    res = CliRunner().invoke(app, [*args, "--dataset", f"csv:{csv}", "--split", "random",
                                   "--negatives", "30"])
    assert res.exit_code != 0
    text = " ".join(res.output.split())
    assert "needs the interactions' timestamps" in text and "has none" in text
