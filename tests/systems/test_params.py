"""Settings from the command line (dprec.systems.params): --param pairs, --epsilon, the ε
grid and --config files, with ε checked in one place for every command (issue 22, §4)."""

from __future__ import annotations

import math

import pytest
from typer.testing import CliRunner

from dprec.cli import app
from dprec.errors import DprecError
from dprec.systems import params as params_module
from dprec.systems.params import (
    check_epsilon,
    config_from_file,
    epsilon_grid,
    param_pairs,
    system_params,
)
from dprec.systems.registry import config_to_toml, make_config


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, -math.inf])
def test_an_epsilon_is_a_number_above_zero(bad):
    with pytest.raises(DprecError, match=f"epsilon must be > 0, got {bad}"):
        check_epsilon(bad)
    assert check_epsilon(0.5) == 0.5


def test_the_grid_holds_numbers_each_an_epsilon():
    assert epsilon_grid("0.5, 1,,2") == [0.5, 1.0, 2.0]
    assert epsilon_grid("") == []
    with pytest.raises(DprecError, match=r"--eps-grid must hold numbers, got 'x'"):
        epsilon_grid("1,x")
    with pytest.raises(DprecError, match=r"every ε in --eps-grid must be > 0, got -2.0"):
        epsilon_grid("1,-2")


def test_param_pairs_the_last_repeated_key_wins():
    assert param_pairs([" k = 5", "k=7", "epochs=3"]) == {"k": "7", "epochs": "3"}
    assert param_pairs(None) == {}
    with pytest.raises(DprecError, match="--param must look like KEY=VALUE"):
        param_pairs(["=3"])


def test_epsilon_is_set_only_on_a_system_that_has_one():
    assert system_params("dplcf-sp", 2.0, {"neighbours": "5"}) == {"neighbours": "5",
                                                                    "epsilon": 2.0}
    with pytest.raises(DprecError, match="mf-np is not private"):
        system_params("mf-np", 1.0, {})
    with pytest.raises(DprecError, match="epsilon must be > 0"):
        system_params("dplcf-sp", 0.0, {})


def test_a_config_file_is_for_one_system(tmp_path):
    path = tmp_path / "dplcf-sp.toml"
    path.write_text(config_to_toml("dplcf-sp", make_config("dplcf-sp", {"neighbours": "7"}),
                                   {"by": "test"}))
    cfg, cf = config_from_file(path, "dplcf-sp")
    assert cfg.neighbours == 7 and cf.system == "dplcf-sp"
    assert config_from_file(None, "dplcf-sp") == (None, None)
    with pytest.raises(DprecError, match="is for dplcf-sp, not fmf-ldp"):
        config_from_file(path, "fmf-ldp")


@pytest.mark.parametrize("argv,seen", [
    (["run", "dplcf-sp", "--epsilon", "-3"], -3.0),
    (["tune", "dplcf-sp", "--epsilon", "-3"], -3.0),
    (["simulate", "dplcf-sp", "--epsilon", "-3"], -3.0),
    (["serve", "server", "--protocol", "dplcf-sp", "--state", "s", "--n-items", "5",
      "--epsilon", "-3", "--port", "0"], -3.0),
    (["compare", "--epsilon", "-3"], -3.0),
    (["compare", "--eps-grid", "1,-3"], -3.0),
])
def test_every_command_checks_epsilon_in_the_one_place(argv, seen, monkeypatch, tmp_path):
    calls = []

    def spy(value, name="epsilon"):
        calls.append(value)
        return check_epsilon(value, name)

    monkeypatch.setattr(params_module, "check_epsilon", spy)
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, argv, env={"DPREC_SHARED_SECRET": "s" * 32})
    assert res.exit_code == 2, res.output
    assert "must be > 0" in " ".join(res.output.split())
    assert seen in calls
