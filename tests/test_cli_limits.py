"""Issue 21 at the command line: sizes refused before the work with the estimate, writes that
cannot lose a result, SIGTERM kept like Ctrl-C, options that are not silently ignored."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dprec.cli import app

runner = CliRunner()
synthetic_module = importlib.import_module("dprec.data.synthetic")  # not the function
DS = "synthetic-300x200"


def _flat(text: str) -> str:
    return " ".join(text.split())


LIMIT_CASES = [
    (["run", "popularity", "--seeds", "1000000000"],
     r"keeping the results of 1,000,000,000 seeds needs about"),
    (["compare", "--systems", "random", "--seeds", "1000000000"],
     r"keeping the results of 1,000,000,000 seeds needs about"),
    (["run", "popularity", "--seeds", "200000"], "seeds of synthetic-300x200 (their folds"),
    (["run", "mf-np", "--param", "factors=1000000000"],
     "mf-np with factors=1000000000 on 0 users x 0 items needs about"),
    (["run", "popularity", "--folds", "3"], "--folds sets k of k-fold rating runs"),
    (["run", "bias", "--split", "user", "--folds", "3"], "this run uses the user split"),
    (["compare", "--systems", "random", "--folds", "3"], "--folds sets k of k-fold"),
    (["run", "fmf-ldp", "--epsilon", "1e-300"],
     "epsilon=1e-300 is too small for the binary mechanism"),
    (["run", "fmf-ldp", "--epsilon", "1e-300", "--param", "mechanism=piecewise"],
     "epsilon=1e-300 is too small for the piecewise mechanism"),
]


@pytest.mark.parametrize("argv, message", LIMIT_CASES,
                         ids=[" ".join(c[0]) for c in LIMIT_CASES])
def test_refused_up_front_with_the_estimate(argv, message, tmp_path, monkeypatch):
    monkeypatch.setattr(synthetic_module, "machine_memory", lambda: 8 << 30)
    start = time.perf_counter()
    res = runner.invoke(app, [*argv, "--dataset", DS, "--out", str(tmp_path / "out")])
    assert res.exit_code == 2, res.output
    assert message in _flat(res.output)
    assert "this machine has 8.0 GiB" in _flat(res.output) or "GiB" not in message
    assert "Traceback" not in res.output
    assert time.perf_counter() - start < 20


def test_rating_folds_are_still_read(tmp_path):
    res = runner.invoke(app, ["run", "global-mean", "--dataset", DS, "--seeds", "1",
                              "--folds", "3", "--json", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["protocol"]["folds_per_seed"] == 3


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")
@pytest.mark.parametrize("command", [["run", "popularity"], ["compare", "--systems", "random"]])
def test_out_that_cannot_be_written_is_refused_before_the_work(command, monkeypatch):
    """/proc passes os.access for root, yet nothing can be made there: the results were
    computed, then lost in a PermissionError traceback."""
    from dprec.evaluation import runner as runner_module
    monkeypatch.setattr(runner_module.Experiment, "run",
                        lambda *a, **k: pytest.fail("the work started"))
    res = runner.invoke(app, [*command, "--dataset", DS, "--seeds", "1", "--out",
                              "/proc/dprec-no-such-dir/x"])
    assert res.exit_code == 2, res.output
    assert "cannot write there" in _flat(res.output)
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert "Traceback" not in res.output


def test_tune_out_that_cannot_be_written_is_refused_before_the_work(monkeypatch):
    monkeypatch.setattr("dprec.evaluation.tuning.tune",
                        lambda *a, **k: pytest.fail("the work started"))
    res = runner.invoke(app, ["tune", "lcf-ub", "--dataset", DS, "--seeds", "1", "--out",
                              "/proc/dprec-no-such-dir/x.toml"])
    assert res.exit_code == 2 and "cannot write there" in _flat(res.output), res.output


def test_tune_keeps_a_config_written_meanwhile(tmp_path, monkeypatch):
    """Another run saves the same --out while this one tunes: both configs are kept."""
    import dprec.evaluation.tuning as tuning
    target = tmp_path / "c.toml"
    original = tuning.tune

    def tune_while_another_run_saves(*a, **k):
        result = original(*a, **k)
        target.write_text("# the other run's config\n")
        return result

    monkeypatch.setattr(tuning, "tune", tune_while_another_run_saves)
    res = runner.invoke(app, ["tune", "lcf-ub", "--dataset", DS, "--seeds", "1", "--out",
                              str(target)])
    assert res.exit_code == 0, res.output
    assert target.read_text() == "# the other run's config\n"
    other = tmp_path / "c-1.toml"
    assert other.is_file() and 'system = "lcf-ub"' in other.read_text()
    assert f"saved {other}" in _flat(res.stdout)
    assert "was written by another run" in _flat(res.output)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


SIGTERM_SCRIPT = textwrap.dedent("""
    import os, signal, sys
    from dprec.evaluation.runner import Experiment
    from dprec.cli import app
    original, calls = Experiment.run, []

    def term_on_second(self, make, *a, **k):
        calls.append(1)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGTERM)
        return original(self, make, *a, **k)

    Experiment.run = term_on_second
    sys.argv = ["dprec", "compare", "--dataset", "synthetic-300x200", "--seeds", "1",
                "--systems", "random,popularity,lcf-ub", "--eps-grid", "", "--out",
                sys.argv[1]]
    app()
""")


@pytest.mark.slow  # a compare process, killed
def test_sigterm_during_compare_keeps_the_folder_like_ctrl_c(tmp_path):
    proc = subprocess.run([sys.executable, "-c", SIGTERM_SCRIPT, str(tmp_path)],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 143, proc.stderr
    (folder,) = (tmp_path / DS).iterdir()
    assert folder.name.endswith("-incomplete") and not folder.name.startswith(".")
    status = json.loads((folder / "status.json").read_text())
    assert status == {"complete": False, "finished": ["random"], "failed": {},
                      "stopped": "terminated (SIGTERM)"}
    assert "terminated (SIGTERM): finished systems kept in" in _flat(proc.stderr)


def test_a_degenerate_run_is_an_error_not_nan(tmp_path):
    """One item: nothing can be ranked, every metric was NaN and the JSON held bare NaN."""
    data = tmp_path / "one.csv"
    data.write_text("user,item\n1,7\n2,7\n3,7\n4,7\n")
    res = runner.invoke(app, ["run", "popularity", "--dataset", f"csv:{data}", "--split",
                              "random", "--seeds", "1", "--json", "--out",
                              str(tmp_path / "out")])
    assert res.exit_code == 2, res.output
    assert "degenerate run" in _flat(res.output) and "1 items" in _flat(res.output)
    assert not list((tmp_path / "out").rglob("*.json"))


@pytest.mark.parametrize("line, message", [
    ('neighbours = "20"', "neighbours must be int, got '20' (str); write it without quotes"),
    ("neighbours = 20.0", "neighbours must be int, got 20.0 (float)"),
    ('epsilon = "1"', "epsilon must be float, got '1' (str)"),
    ("neighbourhood = 3", "neighbourhood must be 'item' or 'user', got 3 (int)"),
])
def test_a_toml_config_value_of_the_wrong_type_is_refused(line, message, tmp_path):
    config = tmp_path / "c.toml"
    config.write_text(f'system = "lcf-sp"\n\n[config]\n{line}\n')
    res = runner.invoke(app, ["run", "lcf-sp", "--config", str(config), "--dataset", DS,
                              "--out", str(tmp_path / "out")])
    assert res.exit_code == 2, res.output
    assert f"config file {config}: lcf-sp: {message}" in _flat(res.output)


def test_a_toml_config_with_the_right_types_is_read(tmp_path):
    from dprec.systems.registry import read_config
    config = tmp_path / "c.toml"
    config.write_text('system = "lcf-sp"\n\n[config]\nneighbours = 20\nepsilon = 2\n')
    assert read_config(config).params == {"neighbours": 20, "epsilon": 2}
