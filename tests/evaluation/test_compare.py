import json
import math

import pytest

from dprec.data.synthetic import synthetic
from dprec.evaluation import plots
from dprec.evaluation.compare import (
    comparison_rows,
    eps_sweep,
    level_epsilon,
    private_names,
    run_systems,
    save_comparison,
)
from dprec.evaluation.plots import unbounded_points
from dprec.evaluation.ranking import RankingEvaluator
from dprec.evaluation.rating import RatingEvaluator
from dprec.evaluation.runner import Experiment
from dprec.evaluation.split import KFoldSplit
from dprec.privacy.guarantee import reported_epsilon
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


@pytest.fixture(scope="module")
def rating_results():
    """laplace-svd (no finite whole-profile eps) and ldp-svd with hide_items, 2 folds."""
    exp = Experiment(synthetic(120, 60, 2_500, rng=4), [0], KFoldSplit(2), RatingEvaluator())
    small = {"epochs": 1, "factors": 2}
    configs = {"laplace-svd": make_config("laplace-svd", small),
               "ldp-svd": make_config("ldp-svd", {**small, "hide_items": True})}
    res = run_systems(exp, list(configs), configs)
    sweep = eps_sweep(exp, list(configs), configs, [1.0], metric="RMSE", protocol="rating")
    return res, sweep


def test_rating_rows_and_sweep_read_the_whole_profile(rating_results):
    res, sweep = rating_results
    rows = {r["system"]: r for r in comparison_rows(res)}
    whole = 60 * (math.log(1 / 0.0625) + 1.0)  # N items x (ln 1/q + eps), one-sided
    assert rows["ldp-svd"]["eps user"] == pytest.approx(reported_epsilon(whole), rel=1e-9)
    assert rows["ldp-svd"]["sides"] == "one"
    assert rows["laplace-svd"]["eps user"] == "inf" and rows["laplace-svd"]["sides"] == "none"
    for name in rows:  # the values-only numbers stay visible beside, never as "eps user"
        assert 1.0 <= rows[name]["eps user_values"] <= 60.0
    assert sweep["laplace-svd"][0]["user_epsilon"] == math.inf
    assert sweep["ldp-svd"][0]["user_epsilon"] == pytest.approx(reported_epsilon(whole), rel=1e-9)


def test_per_user_plot_names_the_systems_it_cannot_place(rating_results, tmp_path,
                                                         monkeypatch):
    _, sweep = rating_results
    sweep = {**sweep, "half": [{**sweep["ldp-svd"][0], "epsilon": 2.0},
                               {**sweep["laplace-svd"][0], "epsilon": 3.0}]}
    assert unbounded_points(sweep, "user_epsilon") == {"laplace-svd": 1, "half": 1}
    figures = []
    monkeypatch.setattr(plots.plt, "close", figures.append)
    plots.plot_metric_vs_eps(sweep, tmp_path / "u.png", "t", x="user_epsilon", log_x=True)
    texts = [t.get_text() for t in figures[0].axes[0].texts]
    note = next(t for t in texts if t.startswith("ε = ∞"))
    assert "laplace-svd" in note and "half (1 of 2 points)" in note
    assert "ldp-svd" not in note.replace("laplace-svd", "")
