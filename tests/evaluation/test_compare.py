import json
import math

import pytest

from dprec.data.synthetic import synthetic
from dprec.evaluation.compare import (
    comparison_rows,
    eps_sweep,
    level_epsilon,
    private_names,
    run_systems,
    save_comparison,
)
from dprec.evaluation.ranking import RankingEvaluator
from dprec.evaluation.runner import Experiment
from dprec.systems.registry import make_config


@pytest.fixture(scope="module")
def results():
    evaluator = RankingEvaluator(49, (1, 2, 5, 10, 20))
    exp = Experiment(synthetic(200, 150, 6_000, rng=1), [0, 1], evaluator=evaluator)
    names = ["random", "lcf-ub", "dplcf-sp"]
    configs = {"lcf-ub": make_config("lcf-ub", {"neighbours": 10})}
    seen = []
    res = run_systems(exp, names, configs, on_result=lambda n, r: seen.append(n))
    assert seen == names
    sweep = eps_sweep(Experiment(exp.dataset, [0], evaluator=evaluator), ["dplcf-sp"], {},
                      [0.5, 2.0])
    return exp, res, sweep


def test_configs_reach_the_systems(results):
    _, res, _ = results
    assert res["lcf-ub"].parameters["neighbours"] == 10
    assert res["dplcf-sp"].parameters["neighbours"] == 20


def test_rows_show_both_privacy_levels(results):
    _, res, _ = results
    rows = {r["system"]: r for r in comparison_rows(res)}
    assert rows["random"]["eps user"] == "" and rows["random"]["sides"] == ""
    d = rows["dplcf-sp"]
    assert d["eps event"] == pytest.approx(1.0, rel=1e-5)
    assert d["eps user_basic"] == pytest.approx(150.0)
    assert 1.0 < d["eps user"] < 150.0 and d["delta user"] > 0


def test_sweep_carries_the_per_user_epsilon(results):
    _, _, sweep = results
    pts = sweep["dplcf-sp"]
    assert [p["epsilon"] for p in pts] == [0.5, 2.0]
    assert pts[0]["user_epsilon"] < pts[1]["user_epsilon"] <= 2.0 * 150
    assert {p["sides"] for p in pts} == {"two"}


def test_level_epsilon():
    assert math.isnan(level_epsilon(None, "user"))
    assert level_epsilon({"levels": {"user": {"epsilon": "inf"}}}, "user") == math.inf
    assert level_epsilon({"levels": {"user": {"epsilon": 3}}}, "user") == 3.0


def test_private_names():
    assert private_names(["random", "dplcf-sp", "mf-np", "fmf-ldp"]) == ["dplcf-sp", "fmf-ldp"]


def test_saved_files(results, tmp_path):
    exp, res, sweep = results
    paths = save_comparison(tmp_path, "toy", res, sweep, list(exp.ks))
    names = {p.name for p in paths}
    assert {"results.json", "results.csv", "hr_at_k.png", "hr_at_k_full.png",
            "hr10_vs_eps.png", "hr10_vs_user_eps.png"} == names
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["results"]["dplcf-sp"]["privacy"]["levels"]["user_basic"]["epsilon"] == 150.0
    assert doc["eps_sweep"]["dplcf-sp"][1]["epsilon"] == 2.0
    header = (tmp_path / "results.csv").read_text().splitlines()[0]
    assert "eps event" in header and "eps user" in header
