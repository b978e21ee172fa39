import numpy as np
import pytest
from typer.testing import CliRunner

from dprec.cli import app
from dprec.data.synthetic import synthetic
from dprec.errors import DprecError
from dprec.evaluation.ranking import RankingEvaluator
from dprec.evaluation.runner import Experiment
from dprec.evaluation.split import KFoldSplit
from dprec.evaluation.tuning import grid_points, training_part, tune
from dprec.systems.registry import read_config


@pytest.fixture(scope="module")
def exp():
    ds = synthetic(250, 300, 9_000, rng=3)
    return Experiment(ds, [0], evaluator=RankingEvaluator(49, (10,)))


def test_training_part_never_holds_a_test_interaction(exp):
    fold, _ = exp.folds(0)[0]
    part = training_part(exp.dataset, fold)
    users = fold.test_users
    held = np.asarray(part.matrix[users, fold.test_items[users]]).ravel()
    assert not held.any()
    assert part.matrix.nnz == exp.dataset.matrix.nnz - len(users)
    assert len(part.timestamps) == part.matrix.nnz
    inner, _ = Experiment(part, [0]).folds(0)[0]
    assert not np.any(inner.test_items[users] == fold.test_items[users])


def test_training_part_of_a_rating_fold():
    ds = synthetic(100, 300, 3_000, rng=1)
    fold = KFoldSplit(3).folds(ds, np.random.default_rng(0))[0]
    part = training_part(ds, fold)
    assert part.matrix.nnz == fold.train.nnz and part.timestamps is None


def test_tune_picks_the_best_validation_point(exp):
    res = tune("lcf-ub", exp, {"neighbours": [1, 30]}, "HR@10")
    assert res.best == {"neighbours": 30}
    scores = {s["neighbours"]: s["score"] for s in res.scores}
    assert scores[30] > scores[1] == pytest.approx(min(scores.values()))
    assert res.config.neighbours == 30
    assert "never used" in res.provenance["tuned_on"]
    assert "privacy_note" not in res.provenance


def test_tuning_a_private_system_says_it_is_not_accounted_for(exp):
    res = tune("dplcf-sp", exp, {"neighbours": [10]}, "HR@10")
    assert "NOT accounted" in res.provenance["privacy_note"]


@pytest.mark.parametrize("grid, metric, message", [
    ({}, "HR@10", "grid is empty"),
    ({"neighbours": []}, "HR@10", "non-empty list"),
    ({"neighbours": "10"}, "HR@10", "non-empty list"),
    ({"colour": [1]}, "HR@10", "has no option colour"),
    ({"neighbours": [10]}, "RMSE", "metric RMSE"),
])
def test_bad_grids(exp, grid, metric, message):
    with pytest.raises(DprecError, match=message):
        tune("lcf-ub", exp, grid, metric)


def test_grid_points_is_the_product():
    pts = grid_points({"a": [1, 2], "b": ["x", "y", "z"]})
    assert len(pts) == 6 and {"a": 2, "b": "z"} in pts


def test_cli_tune_writes_a_config_that_run_reuses(tmp_path):
    runner = CliRunner()
    grid = tmp_path / "grid.toml"
    grid.write_text("[grid]\nneighbours = [5, 10]\n")
    out = tmp_path / "lcf-ub.toml"
    args = ["tune", "lcf-ub", "--dataset", "synthetic-300x200", "--grid", str(grid),
            "--seeds", "1", "--out", str(out)]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    cf = read_config(out)
    assert cf.system == "lcf-ub" and cf.params["neighbours"] in (5, 10)
    again = runner.invoke(app, args)
    assert again.exit_code == 2 and "exists; pass --force" in " ".join(again.output.split())
    run = runner.invoke(app, ["run", "lcf-ub", "--dataset", "synthetic-300x200", "--seeds", "1",
                              "--config", str(out), "--json", "--out", str(tmp_path)])
    assert run.exit_code == 0, run.output
    import json
    doc = json.loads(run.stdout)
    assert doc["parameters"]["neighbours"] == cf.params["neighbours"]
    assert doc["config_file"]["provenance"]["tuned_on"].startswith("validation")
    wrong = runner.invoke(app, ["run", "fcf", "--dataset", "synthetic-300x200",
                                "--config", str(out), "--out", str(tmp_path)])
    assert wrong.exit_code == 2 and "is for lcf-ub, not fcf" in " ".join(wrong.output.split())


def test_a_failing_grid_point_is_recorded_not_fatal(exp):
    res = tune("lcf-ub", exp, {"neighbours": [10, 5000]}, "HR@10")
    assert res.best == {"neighbours": 10}
    failed = [s for s in res.scores if "failed" in s]
    assert len(failed) == 1 and "neighbours must be < number of items" in failed[0]["failed"]
    assert res.provenance["failed_points"] == 1
    with pytest.raises(DprecError, match="every grid point failed"):
        tune("lcf-ub", exp, {"neighbours": [5000]}, "HR@10")


def test_cli_tune_takes_epsilon_for_private_systems(tmp_path):
    runner = CliRunner()
    grid = tmp_path / "grid.toml"
    grid.write_text("[grid]\nneighbours = [10]\n")
    out = tmp_path / "dplcf-sp.toml"
    res = runner.invoke(app, ["tune", "dplcf-sp", "--dataset", "synthetic-300x200", "--grid",
                              str(grid), "--seeds", "1", "--epsilon", "2", "--out", str(out)])
    assert res.exit_code == 0, res.output
    cf = read_config(out)
    assert cf.params["epsilon"] == 2.0 and "NOT accounted" in cf.provenance["privacy_note"]


def test_best_point_position_names_edges_interior_and_categories():
    from dprec.evaluation.tuning import best_point_position
    grid = {"factors": [64, 32, 128], "reg": [1.0, 10.0], "kind": ["item", "user"],
            "alpha": [3.0]}
    at = best_point_position(grid, {"factors": 64, "reg": 10.0, "kind": "item", "alpha": 3.0})
    assert at == {"factors": "interior", "reg": "upper edge",
                  "kind": "categorical (every value tried)", "alpha": "only value"}
    assert best_point_position({"f": [2, 1]}, {"f": 1}) == {"f": "lower edge"}


def test_tuning_reads_the_full_ranking_metric_by_default(exp):
    res = tune("lcf-ub", exp, {"neighbours": [1, 30]}, "HR@10")
    assert res.provenance["metric"].startswith("HR@10 (full-topk)")
    sampled = tune("lcf-ub", exp, {"neighbours": [1, 30]}, "HR@10", protocol="sampled")
    assert sampled.provenance["metric"].startswith("HR@10 (sampled)")
    assert res.best_score != sampled.best_score
    assert res.provenance["best_position"] == {"neighbours": "upper edge"}


def test_cli_tune_protocol_and_full_ranking_metrics(tmp_path):
    runner = CliRunner()
    grid = tmp_path / "grid.toml"
    grid.write_text("[grid]\nneighbours = [5, 10]\n")
    base = ["tune", "lcf-ub", "--dataset", "synthetic-300x200", "--grid", str(grid),
            "--seeds", "1"]
    res = runner.invoke(app, [*base, "--metric", "MRR", "--out", str(tmp_path / "a.toml")])
    assert res.exit_code == 0, res.output
    assert read_config(tmp_path / "a.toml").provenance["metric"].startswith("MRR (full-topk)")
    bad = runner.invoke(app, [*base, "--protocol", "sampled", "--metric", "MRR", "--out",
                              str(tmp_path / "b.toml")])
    assert bad.exit_code == 2 and "metric MRR is not measured" in " ".join(bad.output.split())
    bad = runner.invoke(app, [*base, "--protocol", "rating", "--out", str(tmp_path / "c.toml")])
    assert bad.exit_code == 2 and "--protocol rating" in " ".join(bad.output.split())
