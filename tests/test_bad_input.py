"""Hostile input, by class: each class is one parametrised catalogue, easy to extend.

1. Bad command-line input gets a clear error (exit 2) before any work, never a traceback.
2. A hostile server cannot crash a client: every broadcast is validated before use.
3. No result is lost: unique paths, failures recorded, interrupted runs kept.
(Bad data files are catalogued in tests/data/test_bad_data.py; bad messages are fuzzed in
tests/protocol/test_fuzz.py.)
"""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
import scipy.sparse as sp
from typer.testing import CliRunner

from dprec.cli import app
from dprec.errors import DprecError
from dprec.protocol.messages import MessageError
from dprec.systems.dplcf.messages import NeighbourLists

runner = CliRunner()
DS = "synthetic-300x200"


def _flat(text: str) -> str:
    return " ".join(text.split())


# 1. command-line input -------------------------------------------------------------------

CLI_CASES = [
    (["run", "dplcf-sp", "--epsilon", "0"], "epsilon must be > 0"),
    (["run", "dplcf-sp", "--epsilon", "nan"], "epsilon must be > 0"),
    (["run", "dplcf-sp", "--epsilon", "1e-300"], "too small for a float64 flip probability"),
    (["run", "fmf-ldp", "--epsilon", "1e6"], "epsilon must be <= 50 per report"),
    # regression: e^eps overflowed (a raw OverflowError) before these were refused
    (["run", "dplcf-oue", "--epsilon", "1000"], "epsilon must be < 700 for the OUE flip"),
    (["run", "ldp-pop", "--epsilon", "1000"], "epsilon must be < 700 for the OUE flip"),
    (["run", "dplcf-sp", "--epsilon", "1000"], "epsilon must be < 36.7368 for the symmetric"),
    (["run", "fmf-ldp", "--param", "k=1000000000"], "k must be <= 65536"),
    (["run", "fmf-ldp", "--param", "k=1e9"], "k must be int"),
    (["run", "fmf-ldp", "--param", "user_budget=-1"], "user_budget must be > 0"),
    (["run", "fmf-ldp", "--param", "batch_size=0"], "batch_size must be >= 1"),
    (["run", "dplcf-sp", "--param", "batch_size=-1"], "batch_size must be an integer >= 1"),
    (["run", "dplcf-sp", "--param", "neighbours=abc"], "neighbours must be int"),
    (["run", "dplcf-sp", "--negatives", "-3"], "negatives must be an integer >= 1"),
    (["run", "dplcf-sp", "--split", "kfold"], "must be latest or random"),
    (["run", "bias", "--split", "latest"], "must be kfold or user"),
    (["run", "nope"], "unknown system 'nope'"),
    (["run", "bpr-mf", "--param", "k=5"], "bpr-mf has no option k"),
    (["run", "mf-np", "--epsilon", "1"], "mf-np is not private"),
    (["run", "dplcf-sp", "--dataset", "no-such-data"], "no-such-data"),
    (["compare", "--eps-grid", "1,x"], "--eps-grid must hold numbers"),
    (["compare", "--eps-grid", "1,-2"], "must be > 0"),
    (["compare", "--systems", "random,random"], "names a system twice"),
    (["compare", "--systems", "bias"], "bias is a rating system"),
    (["compare", "--preset", "tuned"], "give --configs DIR"),
    (["compare", "--preset", "paper", "--configs", "configs/ml-100k"], "drop --configs"),
    (["compare", "--preset", "nope"], "--preset must be default, paper or tuned"),
    (["compare", "--sweep-seeds", "0"], "sweep-seeds"),
    (["run", "fmf-ldp", "--param", "factors"], "KEY=VALUE"),
    (["run", "fcf", "--config", "/no/such.toml"], "does not exist"),
    (["compare", "--param", "nope=1"], "no listed system has the option nope"),
    (["tune", "random"], "has no default grid"),
    (["tune", "lcf-ub", "--metric", "RMSE"], "metric RMSE"),
    (["tune", "lcf-ub", "--grid", "pyproject.toml"], "[grid] KEY = [values"),  # not markup
]


@pytest.mark.parametrize("argv, message", CLI_CASES, ids=[" ".join(c[0]) for c in CLI_CASES])
def test_bad_command_line_input(argv, message, tmp_path):
    start = time.perf_counter()
    extra = ["--dataset", DS] if "--dataset" not in argv else []
    res = runner.invoke(app, [*argv, *extra, "--out", str(tmp_path / "out")])
    assert res.exit_code == 2, res.output
    assert message in _flat(res.output)
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert "Traceback" not in res.output
    assert time.perf_counter() - start < 30  # refused before the work, not after it


@pytest.mark.parametrize("command", [["run", "random"], ["compare", "--systems", "random"]])
def test_out_under_a_regular_file_is_refused_first(command, tmp_path):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    res = runner.invoke(app, [*command, "--dataset", DS, "--seeds", "1", "--out",
                              str(a_file / "sub")])
    assert res.exit_code == 2 and "is a file, not a folder" in _flat(res.output)


# 2. hostile broadcasts ---------------------------------------------------------------------

N_ITEMS = 30


def _lists(indices=None, sims=None, full=None):
    rng = np.random.default_rng(0)
    idx = rng.integers(0, N_ITEMS, (N_ITEMS, 4)).astype(np.int32) if indices is None else indices
    val = rng.random((N_ITEMS, 4)).astype(np.float32) if sims is None else sims
    return NeighbourLists(idx, val, full)


HOSTILE_LISTS = {
    "index past the catalogue": lambda: _lists(np.full((N_ITEMS, 4), N_ITEMS, np.int32)),
    "negative index": lambda: _lists(np.full((N_ITEMS, 4), -1, np.int32)),
    "huge index": lambda: _lists(np.full((N_ITEMS, 4), 2**31 - 1, np.int32)),
    "nan similarity": lambda: _lists(sims=np.full((N_ITEMS, 4), np.nan, np.float32)),
    "inf similarity": lambda: _lists(sims=np.full((N_ITEMS, 4), np.inf, np.float32)),
    "shapes differ": lambda: _lists(sims=np.zeros((N_ITEMS, 3), np.float32)),
    "float indices": lambda: _lists(np.zeros((N_ITEMS, 4), np.float32)),
    "full not square": lambda: _lists(full=np.zeros((N_ITEMS, 2), np.float32)),
}


@pytest.mark.parametrize("case", HOSTILE_LISTS)
def test_hostile_neighbour_lists_are_refused(case):
    with pytest.raises(MessageError):
        HOSTILE_LISTS[case]()


def test_a_broadcast_for_another_catalogue_is_refused():
    other = NeighbourLists(np.zeros((N_ITEMS + 5, 4), np.int32),
                           np.zeros((N_ITEMS + 5, 4), np.float32))
    with pytest.raises(MessageError, match=f"client's {N_ITEMS} items"):
        other.check_for(N_ITEMS)
    with pytest.raises(MessageError, match="full similarity"):
        _lists().check_for(N_ITEMS, need_full=True)


@pytest.mark.parametrize("cut", [0, 5, 17, 100])
def test_hostile_broadcast_bytes_are_refused(cut):
    data = bytearray(_lists().to_bytes())
    data[-4:] = b"\xff\xff\xff\x7f"  # a non-finite similarity
    with pytest.raises(MessageError):
        NeighbourLists.from_bytes(bytes(data))
    with pytest.raises(MessageError):
        NeighbourLists.from_bytes(bytes(data[:cut]))


@pytest.mark.parametrize("bad", ["nan", "shape", "ints", "none"])
def test_fmf_clients_refuse_a_hostile_item_matrix(bad):
    from dprec.systems.fmf.client import check_item_matrix
    V = np.ones((N_ITEMS, 3))
    hostile = {"nan": np.full((N_ITEMS, 3), np.nan), "shape": np.ones((N_ITEMS + 1, 3)),
               "ints": V.astype(np.int64), "none": None}[bad]
    with pytest.raises(DprecError, match="item matrix"):
        check_item_matrix(hostile, N_ITEMS, 3)
    assert check_item_matrix(V, N_ITEMS, 3) is V


def test_a_hostile_server_on_the_engine_cannot_reach_the_scorer(monkeypatch):
    """A server that publishes out-of-range neighbours is stopped before any scoring."""
    import dprec.systems.dplcf.server as server
    from dprec.systems.registry import make_system

    def hostile(sim, k, include_full):
        n = sim.shape[0]
        return NeighbourLists(np.zeros((n + 7, k), np.int32), np.zeros((n + 7, k), np.float32))

    monkeypatch.setattr(server, "publish", hostile)
    train = sp.random(40, N_ITEMS, density=0.2, format="csr", random_state=1)
    train.data[:] = 1
    with pytest.raises(MessageError, match="client's 30 items"):
        make_system("dplcf-sp", {"neighbours": 4}).fit(train, np.random.default_rng(0))


# 3. nothing lost -----------------------------------------------------------------------------

def test_two_runs_in_the_same_second_keep_both_results(tmp_path):
    from dprec.evaluation.results import ResultsFolder, new_result_file
    files = {new_result_file(tmp_path, DS, "random") for _ in range(5)}
    assert len(files) == 5
    folders = [ResultsFolder(tmp_path, DS, "compare") for _ in range(3)]
    finals = {f.complete() for f in folders}
    assert len(finals) == 3 and all(p.is_dir() for p in finals)


def test_a_failing_system_is_recorded_and_the_others_kept(tmp_path):
    res = runner.invoke(app, ["compare", "--dataset", DS, "--seeds", "1", "--systems",
                              "random,lcf-ub,popularity", "--param", "neighbours=500",
                              "--eps-grid", "", "--out", str(tmp_path)])
    assert res.exit_code == 1
    assert "lcf-ub: neighbours must be < number of items" in _flat(res.output)
    (folder,) = (tmp_path / DS).iterdir()
    doc = json.loads((folder / "results.json").read_text())
    assert set(doc["results"]) == {"random", "popularity"}
    assert "lcf-ub" in doc["failed"]
    status = json.loads((folder / "status.json").read_text())
    assert status["complete"] is False and status["finished"] == ["random", "popularity"]


def test_an_interrupted_compare_keeps_finished_systems(tmp_path, monkeypatch):
    from dprec.evaluation.runner import Experiment
    original = Experiment.run
    calls = []

    def interrupt_second(self, make, *a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return original(self, make, *a, **k)

    monkeypatch.setattr(Experiment, "run", interrupt_second)
    res = runner.invoke(app, ["compare", "--dataset", DS, "--seeds", "1", "--systems",
                              "random,popularity,lcf-ub", "--eps-grid", "", "--out",
                              str(tmp_path)])
    assert res.exit_code == 130
    (folder,) = (tmp_path / DS).iterdir()
    assert folder.name.endswith("-incomplete")
    status = json.loads((folder / "status.json").read_text())
    assert status == {"complete": False, "finished": ["random"], "failed": {},
                      "stopped": "interrupted"}
    assert json.loads((folder / "systems" / "random.json").read_text())["system"] == "random"


def test_a_finished_compare_is_marked_complete(tmp_path):
    res = runner.invoke(app, ["compare", "--dataset", DS, "--seeds", "1", "--systems", "random",
                              "--eps-grid", "", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    (folder,) = (tmp_path / DS).iterdir()
    assert not folder.name.startswith(".") and not folder.name.endswith("incomplete")
    assert json.loads((folder / "status.json").read_text())["complete"] is True
