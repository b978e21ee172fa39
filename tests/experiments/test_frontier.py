"""experiments/frontier.py (issue 24 §3): the per-user ε search, the frontier JSON, the
per-user ε of each point against the system's own privacy report, and resuming."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

from dprec.data.registry import load_dataset
from dprec.errors import DprecError
from dprec.evaluation.compare import level_epsilon
from dprec.evaluation.frontier_summary import fmt_point, matching_user_epsilon
from dprec.evaluation.runner import Experiment
from dprec.systems.registry import make_config, make_system, parse_label

ROOT = Path(__file__).resolve().parents[2]
DATASET = "synthetic-100x200-1200"
SYSTEMS = ["dp-pop", "dplcf-sp"]
EPS = [1.0, 4.0]


def _module():
    spec = importlib.util.spec_from_file_location("frontier", ROOT / "experiments" / "frontier.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["frontier"] = module
    spec.loader.exec_module(module)
    return module


frontier = _module()


def _argv(tmp: Path, *extra: str) -> list[str]:
    return ["--dataset", DATASET, "--seeds", "1", "--systems", ",".join(SYSTEMS),
            "--references", "random,popularity", "--user-eps", *map(str, EPS),
            "--out", str(tmp / "out"), "--docs", str(tmp / "docs"),
            "--configs", str(tmp / "no-configs"), *extra]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("frontier")
    return tmp, frontier.main(_argv(tmp))


def test_the_search_lands_in_the_window_below_the_target():
    calls = []

    def probe(eps: float) -> float:  # a DPLCF-like curve: per-user ε >> ε per bit
        calls.append(eps)
        return 200 * eps + 500 * eps ** 2

    cal = frontier.calibrate(2.0, probe)
    assert (1 - frontier.TOLERANCE) * 2.0 <= cal.user_epsilon <= 2.0
    assert cal.user_epsilon == probe(cal.epsilon) and len(cal.probes) == len(calls) - 1
    assert len(calls) <= frontier.MAX_PROBES + 1


def test_a_system_calibrated_to_the_per_user_epsilon_needs_one_probe():
    cal = frontier.calibrate(8.0, lambda e: e * (1 - 1e-5))
    assert cal.epsilon == 8.0 and len(cal.probes) == 1  # exactly, not exp(log(8))


def test_no_epsilon_below_the_target_is_an_error():
    with pytest.raises(DprecError, match="no mechanism epsilon"):
        frontier.calibrate(1.0, lambda e: 10.0, max_probes=3)


def test_the_json_has_every_field(run):
    tmp, doc = run
    on_disk = json.loads((tmp / "out" / DATASET / "frontier.json").read_text())
    assert on_disk["dataset"] == DATASET and on_disk["delta"] == 1e-6
    assert on_disk["user_epsilons"] == EPS and "command" in on_disk and "date" in on_disk
    assert set(on_disk["systems"]) == set(SYSTEMS)
    for pts in on_disk["systems"].values():
        assert [p["target_user_epsilon"] for p in pts if p["kind"] == "frontier"] == EPS
        for p in pts:
            for key in ("user_epsilon", "user_delta", "mechanism_epsilon", "sides",
                        "adjacency", "config_provenance", "seeds"):
                assert p[key] is not None, key
            for proto in ("sampled", "full"):
                assert 0.0 <= p[proto]["mean"] <= 1.0 and p[proto]["std"] >= 0.0
            assert p["config_provenance"].startswith("untuned" if p["kind"] == "frontier"
                                                     else "paper setting")
    # the seed system's paper point: its own ε (1 per bit), at the per-user ε it accounts
    paper = [p for p in on_disk["systems"]["dplcf-sp"] if p["kind"] == "paper"]
    assert len(paper) == 1 and paper[0]["mechanism_epsilon"] == 1.0
    assert paper[0]["user_epsilon"] > max(EPS)
    assert (tmp / "out" / DATASET / "cells" / "dplcf-sp" / "paper" / "seed0.json").exists()
    assert not [p for p in on_disk["systems"]["dp-pop"] if p["kind"] == "paper"]
    # the generator's oracle is a reference on every synthetic-* data set
    assert set(on_disk["references"]) == {"random", "popularity", "oracle"}
    for name in ("frontier_sampled.png", "frontier_full.png"):
        assert (tmp / "out" / DATASET / name).stat().st_size > 1000
    md = (tmp / "docs" / f"frontier_{DATASET}.md").read_text()
    assert "Command: `" in md and "not accounted" in md and "| dplcf-sp | untuned | 1 |" in md
    assert "## The seed systems at their paper setting" in md


def test_each_point_is_at_the_per_user_epsilon_of_its_privacy_report(run):
    tmp, doc = run
    exp = Experiment(load_dataset(DATASET), [0])
    for label, pts in doc["systems"].items():
        name = parse_label(label)[0]
        for p in pts:
            cfg = make_config(name, {"epsilon": p["mechanism_epsilon"]})
            report = exp.run(lambda n=name, c=cfg: make_system(n, config=c)).privacy
            assert p["user_epsilon"] == pytest.approx(level_epsilon(report, "user"), rel=1e-9)
            assert p["user_delta"] <= 1e-6
            if p["kind"] == "paper":
                continue
            target = p["target_user_epsilon"]
            assert (1 - frontier.TOLERANCE) * target <= p["user_epsilon"] <= target
    # dplcf-sp's ε is per interaction bit: far below the per-user ε it is run at
    assert all(p["mechanism_epsilon"] < p["target_user_epsilon"] / 10
               for p in doc["systems"]["dplcf-sp"] if p["kind"] == "frontier")


def test_a_second_run_loads_every_cell_and_runs_nothing(run, monkeypatch):
    tmp, doc = run

    def no_run(*args, **kwargs):
        raise AssertionError("a stored cell was recomputed")

    monkeypatch.setattr(frontier.Experiment, "run", no_run)
    again = frontier.main(_argv(tmp))
    assert again["systems"] == doc["systems"] and again["references"] == doc["references"]


def test_a_stored_cell_of_another_config_is_not_overwritten(run):
    tmp, _ = run
    path = tmp / "out" / DATASET / "cells" / "dp-pop" / "frontier-eps1" / "seed0.json"
    cell = json.loads(path.read_text())
    cell["config"]["k"] = cell["config"]["k"] + 1
    path.write_text(json.dumps(cell))
    with pytest.raises(DprecError, match="another config.*--force"):
        frontier.main(_argv(tmp))
    assert json.loads(path.read_text())["config"]["k"] == cell["config"]["k"]
    assert not math.isnan(cell["user_epsilon"])


def test_seeds_of_runs_a_label_on_its_first_seeds_only(tmp_path):
    f = frontier.Frontier(DATASET, range(3), tmp_path, seeds_of={"dplcf-sp": 1})
    assert f.label_seeds("dplcf-sp") == [0] and f.label_seeds("dp-pop") == [0, 1, 2]


def test_the_per_user_epsilon_where_a_curve_reaches_a_value():
    def pt(eps: float, hr: float) -> dict:
        return {"kind": "frontier", "user_epsilon": eps, "sampled": {"mean": hr}}

    curve = [pt(4.0, 0.3), pt(1.0, 0.1), pt(16.0, 0.5), {**pt(900.0, 0.9), "kind": "paper"}]
    assert matching_user_epsilon(curve, 0.2) == pytest.approx(2.0)
    assert matching_user_epsilon(curve, 0.05) == 1.0
    assert matching_user_epsilon(curve, 0.6) is None


def test_the_search_starts_from_the_probes_of_the_other_targets():
    def curve(eps: float) -> float:
        return 200 * eps + 500 * eps ** 2

    known = [(e, curve(e)) for e in (0.001, 0.004, 0.03)]
    start = frontier.start_epsilon(2.0, known)
    assert 0.9 * 2.0 <= curve(start) <= 2.0 * 1.1
    assert len(frontier.calibrate(2.0, curve, start).probes) <= 3
    # a system whose epsilon is the per-user epsilon starts at the target, exactly
    assert frontier.start_epsilon(2.0, [(1.0, 0.99998), (0.5, 0.49999)]) == 2.0
    assert frontier.start_epsilon(2.0, []) == 2.0


def test_the_summary_leads_with_full_ranking_and_labels_the_sampled_metric(run):
    tmp, doc = run
    md = (tmp / "docs" / f"frontier_{DATASET}.md").read_text()
    full = md.index("## Full-ranking HR@10")
    assert full < md.index("## Full-ranking Recall@20") < md.index("## Full-ranking NDCG@10") \
        < md.index("## Sampled HR@10 (99 negatives)") < md.index(
        "## Full HR@10, ties broken at random")
    # every headline metric at ε_user 1, beside the references, one seed said as such
    detail = md[md.index("### Every full-ranking metric"):md.index("## Sampled HR@10")]
    assert "| MRR | Coverage@10 | sampled HR@10 (99 negatives) |" in detail
    assert "| dp-pop | 1 | 1 |" in detail and "(1 seed)" in detail
    assert "| dp-pop | 4 |" not in detail
    pop = doc["references"]["popularity"]
    assert pop["full-topk"]["n"] == 1 and set(pop["headline"]) >= {"HR@10", "MRR"}
    assert (tmp / "out" / DATASET / "frontier_full-topk.png").stat().st_size > 1000
    assert doc["targets"] == [] or "full-ranking HR@10" in doc["targets"][0]


def test_cells_stored_before_the_full_ranking_metrics_show_a_dash():
    cell = {"kind": "frontier", "target_user_epsilon": 1.0, "user_epsilon": 1.0,
            "user_delta": 1e-6, "mechanism_epsilon": 1.0, "sides": "two", "model": "m",
            "adjacency": "a", "config": {}, "config_provenance": "untuned",
            "calibration": None, "over_target": False, "seed": 0,
            "metrics": {"sampled": {"HR@10": 0.5}, "full": {"HR@10": 0.1}}}
    point = frontier._point([cell, {**cell, "seed": 1}])
    assert point["full-topk"] is None and point["sampled"]["n"] == 2
    assert fmt_point(point, "full-topk") == "–"
    assert fmt_point(point, "sampled") == "0.500 ± 0.000"


def test_the_oracle_is_a_ceiling_row_above_every_system(run):
    tmp, doc = run
    oracle = doc["references"]["oracle"]
    assert oracle["config_provenance"].startswith("the generator's own scores")
    assert oracle["user_epsilon"] is None and oracle["axis_epsilon"] is None
    best = max(p["full-topk"]["mean"] for pts in doc["systems"].values() for p in pts)
    assert oracle["full-topk"]["mean"] > max(best, doc["references"]["popularity"][
        "full-topk"]["mean"])
    md = (tmp / "docs" / f"frontier_{DATASET}.md").read_text()
    table = md[md.index("## Full-ranking HR@10"):md.index("## Full-ranking Recall@20")]
    assert "| oracle (the generator's scores, ceiling) | the generator's own scores | 1 |" \
        in table


def test_one_privacy_axis_zero_out_with_the_relation_said(run):
    tmp, doc = run
    for label, relation in (("dp-pop", "zero_out"), ("dplcf-sp", "replace_one")):
        for p in doc["systems"][label]:
            assert p["adjacency"] == relation
            # replace-one holds unchanged under zero-out; zero-out is the axis itself
            assert (p["axis_epsilon"], p["axis_delta"]) == (p["user_epsilon"], p["user_delta"])
    md = (tmp / "docs" / f"frontier_{DATASET}.md").read_text()
    assert "One privacy axis" in md and "under **zero-out** adjacency" in md
    assert "ε_user: per-user ε under zero-out adjacency" in md
    accounted = md[md.index("## Accounted per-user ε"):]
    assert "| accounted under |" in accounted and "| replace-one at ε_user 1 |" in accounted
    row = next(r for r in accounted.splitlines() if r.startswith("| dp-pop |"))
    assert "| zero-out |" in row
    eps1 = next(p for p in doc["systems"]["dp-pop"] if p["target_user_epsilon"] == 1.0)
    two = 2 * eps1["user_epsilon"]
    assert f"({two:.4g}, {(1 + math.exp(eps1['user_epsilon'])) * 1e-6:.2g})" in row


def test_a_guarantee_of_an_unknown_relation_is_off_the_axis():
    from dprec.evaluation.frontier_summary import axis_guarantee

    assert axis_guarantee(1.0, 1e-6, "replace_one") == (1.0, 1e-6)
    assert axis_guarantee(1.0, 1e-6, "zero_out") == (1.0, 1e-6)
    assert axis_guarantee(1.0, 1e-6, "add_remove_one") is None  # no sound conversion
    assert axis_guarantee(1.0, 1e-6, "a") is None and axis_guarantee(None, None, None) is None


def _tuned_dpals(folder: Path, eps: float, factors: int, tuned: bool = True) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    provenance = '[provenance]\ntuned_on = "validation"\n' if tuned else ""
    (folder / f"eps{eps:g}.toml").write_text(
        f'system = "dpals"\n[config]\nepsilon = {eps}\nfactors = {factors}\n{provenance}')


def test_the_nearest_tuned_epsilon_in_log_with_ties_to_the_smaller():
    files = {1.0: "one", 8.0: "eight"}
    assert frontier.nearest_tuned(files, 2.0) == (1.0, "one")
    assert frontier.nearest_tuned(files, 4.0) == (8.0, "eight")
    assert frontier.nearest_tuned(files, math.sqrt(8.0)) == (1.0, "one")
    assert frontier.nearest_tuned(files, 0.5) == (1.0, "one")
    assert frontier.nearest_tuned(files, 16.0) == (8.0, "eight")


def test_a_system_tuned_per_epsilon_runs_each_target_from_its_nearest_file(tmp_path):
    _tuned_dpals(tmp_path / "dpals", 1.0, 8)
    _tuned_dpals(tmp_path / "dpals", 8.0, 24)
    f = frontier.Frontier(DATASET, [0], tmp_path / "out", configs_dir=tmp_path)
    at1, prov1 = f.config("dpals", target=1.0)
    at4, prov4 = f.config("dpals[weighting=uniform]", target=4.0)
    assert at1.factors == 8 and prov1.startswith("tuned at ε 1 (") and "run at" not in prov1
    assert at4.factors == 24 and at4.weighting == "uniform"
    assert prov4.startswith("tuned at ε 8 (") and prov4.endswith(", run at ε 4)")
    untuned, prov = f.config("dpals")
    assert untuned.factors == make_config("dpals", {}).factors and "untuned" in prov


def test_a_file_not_tuned_on_this_data_set_is_labelled_transferred(tmp_path):
    _tuned_dpals(tmp_path / "dpals", 1.0, 8, tuned=False)
    (tmp_path / "ease.toml").write_text('system = "ease"\n[config]\nregularization = 7500.0\n')
    f = frontier.Frontier(DATASET, [0], tmp_path / "out", configs_dir=tmp_path)
    assert f.config("dpals", target=1.0)[1].startswith("transferred, not tuned here at ε 1 (")
    assert f.config("ease")[1].startswith("transferred, not tuned here (")


def test_a_per_epsilon_file_of_another_system_is_refused(tmp_path):
    (tmp_path / "dpals").mkdir()
    (tmp_path / "dpals" / "eps1.toml").write_text('system = "dp-pop"\n[config]\nepsilon = 1.0\n')
    with pytest.raises(DprecError, match="must be a dpals config"):
        frontier.Frontier(DATASET, [0], tmp_path / "out", configs_dir=tmp_path)


def test_the_config_column_names_each_tuned_file_with_the_epsilons_it_covers():
    from dprec.evaluation.frontier_summary import config_column

    def pt(at, prov):
        return {"target_user_epsilon": at, "config_provenance": prov}
    one = [pt(1.0, "untuned (system defaults)"), pt(8.0, "untuned (system defaults)")]
    assert config_column(one) == "untuned"
    per_eps = [pt(0.5, "tuned at ε 1 (a.toml, run at ε 0.5)"), pt(1.0, "tuned at ε 1 (a.toml)"),
               pt(8.0, "tuned at ε 8 (b.toml)"), pt(None, "paper setting")]
    assert config_column(per_eps) == "tuned at ε 1: ε_user 0.5, 1; tuned at ε 8: ε_user 8"
    assert config_column([*one, pt(None, "paper setting")]) == "untuned"
    assert config_column([]) == ""
