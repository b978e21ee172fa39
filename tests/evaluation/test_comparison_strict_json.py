"""results.json of ``dprec compare`` is strict JSON, and the report reads it (and old files
with bare NaN tokens) back with the non-finite numbers as floats."""

import json
import math

import pytest

from dprec.evaluation.compare import save_comparison
from dprec.evaluation.runner import RunResult
from dprec.report.folder import read_results_folder


def _refuse_constant(token: str) -> float:
    raise ValueError(f"bare {token} token: not strict JSON")


def _nan_result() -> RunResult:
    """A rating run whose RMSE is NaN (no test ratings) and whose MAE is finite."""
    per_seed = [{"rating": {"RMSE": math.nan, "MAE": 0.5}}]
    return RunResult("bias", {"name": "toy"}, {"kind": "rating"}, {}, [0], per_seed, None, [],
                     0.1)


def test_results_json_is_strict_with_nan_as_text(tmp_path):
    sweep = {"bias": [{"epsilon": math.inf, "mean": math.nan, "std": 0.0,
                       "user_epsilon": math.inf}]}
    save_comparison(tmp_path, "toy", {"bias": _nan_result()}, sweep, [10])
    doc = json.loads((tmp_path / "results.json").read_text(), parse_constant=_refuse_constant)
    assert doc["results"]["bias"]["metrics"]["rating"]["RMSE"]["mean"] == "nan"
    assert doc["results"]["bias"]["per_seed"][0]["rating"]["RMSE"] == "nan"
    assert doc["results"]["bias"]["metrics"]["rating"]["MAE"]["mean"] == 0.5
    assert doc["eps_sweep"]["bias"][0]["epsilon"] == "inf"


@pytest.mark.parametrize("old_file", [False, True], ids=["strict", "bare-nan"])
def test_report_reads_non_finite_metrics(tmp_path, old_file):
    folder = tmp_path / "toy" / "compare-1"
    sweep = {"bias": [{"epsilon": math.inf, "mean": math.nan, "std": 0.0,
                       "user_epsilon": math.inf}]}
    save_comparison(folder, "toy", {"bias": _nan_result()}, sweep, [10])
    if old_file:  # as written before: json.dumps(default=float), bare NaN / Infinity
        doc = {"dataset": "toy", "results": {"bias": _nan_result().to_json()},
               "eps_sweep": sweep, "failed": {}}
        (folder / "results.json").write_text(json.dumps(doc, indent=2, default=float))
        assert "NaN" in (folder / "results.json").read_text()
    (comparison,) = [s for s in read_results_folder(tmp_path).sets if s.kind == "comparison"]
    rmse = comparison.results["bias"]["metrics"]["rating"]["RMSE"]
    assert math.isnan(rmse["mean"]) and rmse["std"] == 0.0
    point = comparison.sweep["bias"][0]
    assert point["epsilon"] == math.inf and math.isnan(point["mean"])
