import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from dprec.cli import app

runner = CliRunner()
DS = "synthetic-300x200"


def test_run_json_contract(tmp_path):
    """`dprec run ... --json` prints exactly one JSON document on stdout (schema 1)."""
    proc = subprocess.run(
        [sys.executable, "-m", "dprec.cli", "run", "dplcf-sp", "--dataset", DS, "--seeds", "2",
         "--param", "neighbours=10", "--json", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["schema"] == 1 and doc["system"] == "dplcf-sp"
    assert doc["seeds"] == [0, 1]
    for proto in ("sampled", "full"):
        assert set(doc["metrics"][proto]["HR@10"]) == {"mean", "std", "ci95", "n"}
        assert "NDCG@10" in doc["metrics"][proto]
    true = doc["privacy"]["true"]
    assert true["epsilon"] == pytest.approx(1.0)
    assert (true["level"], true["sides"], true["model"]) == ("event", "two", "local")
    assert doc["parameters"]["neighbours"] == 10
    assert doc["wall_time_s"] > 0
    assert list(tmp_path.rglob("*.json"))


def test_non_private_system_has_null_privacy(tmp_path):
    res = runner.invoke(app, ["run", "popularity", "--dataset", DS, "--seeds", "1", "--json",
                              "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["privacy"] is None


@pytest.mark.slow
def test_compare_writes_tables_and_plots(tmp_path):
    res = runner.invoke(app, ["compare", "--dataset", DS, "--seeds", "2", "--systems",
                              "random,lcf-ub,lcf-sp,dplcf-sp", "--eps-grid", "0.5,2",
                              "--sweep-seeds", "1", "--param", "neighbours=10",
                              "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    files = {p.name for p in tmp_path.rglob("*")}
    assert {"results.json", "results.csv", "hr_at_k.png", "hr10_vs_eps.png",
            "hr10_vs_user_eps.png"} <= files
    doc = json.loads(next(tmp_path.rglob("results.json")).read_text())
    assert set(doc["results"]) == {"random", "lcf-ub", "lcf-sp", "dplcf-sp"}
    sweep = doc["eps_sweep"]["dplcf-sp"]
    assert [p["epsilon"] for p in sweep] == [0.5, 2.0]
    # the sweep is full-ranking HR@10 (issue 33), recorded so the report labels it so
    assert doc["eps_sweep_metric"] == {"metric": "HR@10", "protocol": "full-topk"}
    from dprec.report.folder import read_results_folder
    [shown] = [s for s in read_results_folder(tmp_path).sets if s.kind == "comparison"]
    assert shown.sweep_metric == ("HR@10", "full-topk")
    assert sweep[0]["user_epsilon"] < sweep[1]["user_epsilon"]
    assert doc["results"]["lcf-ub"]["parameters"]["neighbours"] == 10
    levels = doc["results"]["dplcf-sp"]["privacy"]["levels"]
    assert levels["event"]["epsilon"] == pytest.approx(1.0, rel=1e-5)
    assert levels["user_basic"]["epsilon"] == pytest.approx(200.0)
    assert levels["user"]["epsilon"] < 200.0


def test_fmf_ldp_json_privacy_sections(tmp_path):
    res = runner.invoke(app, ["run", "fmf-ldp", "--dataset", DS, "--seeds", "1", "--param",
                              "epochs=2", "--param", "k=5", "--epsilon", "2.5", "--json",
                              "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    p = doc["privacy"]
    assert p["claimed"]["epsilon"] == pytest.approx(12.5)
    assert p["local"] == {"epsilon_per_report": 2.5, "epsilon_per_round": 12.5,
                          "epsilon_user": 25.0}
    assert p["true"]["level"] == "user"
    assert p["true"]["model"] in ("shuffled", "local")
    assert p["levels"]["user"] == p["true"]
    assert p["levels"]["event"]["epsilon"] == p["levels"]["user"]["epsilon"]
    assert p["levels"]["user_basic"]["epsilon"] == pytest.approx(25.0)
    assert doc["parameters"]["k"] == 5 and doc["parameters"]["epochs"] == 2


def test_compare_rating_task_with_variants(tmp_path):
    res = runner.invoke(app, ["compare", "--task", "rating", "--dataset", DS, "--seeds", "1",
                              "--folds", "3", "--systems", "global-mean,bias,bias[damping=0]",
                              "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    (folder,) = (tmp_path / DS).iterdir()
    doc = json.loads((folder / "results.json").read_text())
    assert list(doc["results"]) == ["global-mean", "bias", "bias[damping=0]"]
    r = doc["results"]["bias[damping=0]"]
    assert r["parameters"]["damping"] == 0.0 and r["protocol"]["task"] == "rating"
    assert len(r["per_seed"]) == 3 and set(r["metrics"]["rating"]) == {"RMSE", "MAE"}
    assert doc["results"]["bias"]["metrics"]["rating"]["RMSE"]["mean"] < \
        doc["results"]["global-mean"]["metrics"]["rating"]["RMSE"]["mean"]
    assert "rating RMSE" in (folder / "results.csv").read_text().splitlines()[0]
    wrong = runner.invoke(app, ["compare", "--task", "rating", "--dataset", DS, "--systems",
                                "dplcf-sp", "--out", str(tmp_path)])
    assert wrong.exit_code == 2 and "is a ranking system" in " ".join(wrong.output.split())


PR_DS = "synthetic-200x60"  # the synthetic generator's taste and genre tags are side features


def test_privrec_runs_on_its_protocol_with_the_result_contract(tmp_path):
    res = runner.invoke(app, ["run", "dp-privrec", "--dataset", PR_DS, "--seeds", "1",
                              "--param", "rounds=2", "--param", "clients_per_round=30",
                              "--param", "noise_multiplier=1", "--param", "initial_clip=1",
                              "--json", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert set(doc["metrics"]) == {"full", "full-topk"}
    assert {"HR@5", "HR@30", "NDCG@20"} <= set(doc["metrics"]["full"])
    assert doc["protocol"]["split"]["kind"] == "user"
    assert doc["privacy"]["true"]["level"] == "user"
    assert doc["privacy"]["true"]["model"] == "central"
    assert doc["privacy"]["claimed"]["epsilon"] > doc["privacy"]["true"]["epsilon"]


def test_a_ranking_baseline_runs_on_the_privrec_protocol_with_split_user(tmp_path):
    res = runner.invoke(app, ["run", "popularity", "--dataset", PR_DS, "--seeds", "1",
                              "--split", "user", "--json", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert set(json.loads(res.stdout)["metrics"]) == {"full", "full-topk"}


def test_compare_privrec_task(tmp_path):
    res = runner.invoke(app, ["compare", "--task", "privrec", "--dataset", PR_DS, "--seeds",
                              "1", "--systems", "random,popularity,privrec-cen", "--param",
                              "rounds=2", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    [folder] = [p for p in (tmp_path / PR_DS).iterdir() if p.name.startswith("compare")]
    names = {p.name for p in folder.iterdir()}
    assert {"results.json", "results.csv", "hr_at_k_full.png"} <= names
    doc = json.loads((folder / "results.json").read_text())
    assert set(doc["results"]) == {"random", "popularity", "privrec-cen"}


def test_side_feature_systems_refuse_the_other_tasks_and_featureless_data(tmp_path):
    res = runner.invoke(app, ["compare", "--task", "ranking", "--dataset", PR_DS,
                              "--systems", "privrec", "--out", str(tmp_path)])
    assert res.exit_code != 0 and "PrivRec protocol" in res.output
    res = runner.invoke(app, ["run", "privrec", "--split", "latest", "--dataset", PR_DS,
                              "--out", str(tmp_path)])
    assert res.exit_code != 0 and "user split" in res.output
