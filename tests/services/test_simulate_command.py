"""``dprec simulate`` and ``dprec serve server`` name the deployable systems from the
descriptors (no list written in the CLI), and ``simulate`` picks the split a system's task
runs once per seed in."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from dprec.cli import app
from dprec.cli.serve import deployable_systems

WIDE = {"COLUMNS": "400", "TERMINAL_WIDTH": "400"}
NAMED = {"dplcf-sp", "dplcf-ap", "lcf-sp", "fmf-ldp", "ldp-svd", "laplace-rr-svd", "privrec",
         "dp-privrec", "dp-pop"}


def test_the_deployable_systems_are_the_ones_a_descriptor_runs():
    names = deployable_systems()
    assert NAMED <= set(names)
    # centrally trained, or not wire messages: no descriptor runs them
    assert not {"bpr-mf", "privrec-cen", "fcf", "popularity"} & set(names)


@pytest.mark.parametrize("command", [["simulate"], ["serve", "server"]])
def test_the_help_names_every_deployable_system(command):
    res = CliRunner().invoke(app, [*command, "--help"], env=WIDE)
    assert res.exit_code == 0, res.output
    assert "DPLCF variant" not in res.output and "{deployable}" not in res.output
    for name in deployable_systems():
        assert f" {name}," in res.output or f" {name}." in res.output, name


def test_a_system_without_a_transport_is_refused_with_the_deployable_ones(tmp_path):
    res = CliRunner().invoke(app, ["simulate", "bpr-mf", "--dataset", "synthetic-300x200",
                                   "--seeds", "1", "--out", str(tmp_path)], env=WIDE)
    assert res.exit_code != 0
    text = " ".join(res.output.split())
    assert "does not run over a network transport" in text
    assert "fmf-ldp" in text and "ldp-svd" in text and "dp-privrec" in text and "dp-pop" in text


RATING = ["simulate", "laplace-rr-svd", "--dataset", "synthetic-300x200", "--param", "epochs=2",
          "--param", "factors=4", "--param", "rating_min=1", "--param", "rating_max=5",
          "--seeds", "1", "--json"]


def test_a_rating_system_simulates_in_the_user_split_by_default(tmp_path):
    res = CliRunner().invoke(app, [*RATING, "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output[-3000:]
    doc = json.loads(res.stdout.strip().splitlines()[-1])
    assert doc["protocol"]["split"]["kind"] == "user"
    assert doc["protocol"]["folds_per_seed"] == 1 and "RMSE" in doc["metrics"]["rating"]


def test_k_fold_is_refused_by_a_simulation(tmp_path):
    res = CliRunner().invoke(app, [*RATING, "--split", "kfold", "--out", str(tmp_path)])
    assert res.exit_code != 0
    assert "--split user" in " ".join(res.output.split())
