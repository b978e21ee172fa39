"""DP-PrivRec's Table 3: reproduced, explained and corrected; the Gaussian calculator."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from dprec.cli import app
from dprec.errors import DprecError
from dprec.privacy.adjacency import Adjacency
from dprec.privacy.gaussian import (
    ADJACENCY,
    gaussian_epsilons,
    noise_multiplier_for,
    pld_poisson_epsilon,
)
from dprec.systems.privrec.accounting import PRIVREC_PAPER_TABLE, privrec_table


@pytest.fixture(scope="module")
def rows():
    return privrec_table()


def test_every_cell_is_reproduced_by_the_papers_over_counting(rows):
    assert len(rows) == 3 * len(PRIVREC_PAPER_TABLE)
    got = np.array([r["reproduced"] for r in rows])
    want = np.array([r["paper"] for r in rows])
    np.testing.assert_allclose(got, want, rtol=1e-4)


def test_the_correct_accounting_matches_the_outside_check(rows):
    by = {(round(r["q"] * 4800), r["delta"]): r for r in rows}
    assert by[(5, 1e-6)]["rdp_without_replacement"] == pytest.approx(0.899, abs=1e-3)
    assert by[(30, 1e-6)]["rdp_without_replacement"] == pytest.approx(2.446, abs=1e-3)
    for r in rows:
        assert r["rdp_without_replacement"] < r["paper"]
        assert 0 < r["pld_poisson"] < r["rdp_without_replacement"]


def test_the_calculator_and_its_inverse_agree():
    eps = gaussian_epsilons(1.3, 0.01, 500, 1e-6)
    assert set(eps) == {"rdp_poisson", "pld_poisson", "rdp_without_replacement"}
    assert eps["pld_poisson"] <= eps["rdp_poisson"] * 1.01
    z = noise_multiplier_for(eps["rdp_poisson"], 0.01, 500, 1e-6)
    assert z == pytest.approx(1.3, abs=2e-3)
    assert gaussian_epsilons(z, 0.01, 500, 1e-6)["rdp_poisson"] <= eps["rdp_poisson"] + 1e-9


@pytest.mark.parametrize("kwargs, message", [
    ({"noise_multiplier": 0, "sampling_rate": 0.1, "steps": 10, "delta": 1e-6}, "noise"),
    ({"noise_multiplier": 1, "sampling_rate": 1.5, "steps": 10, "delta": 1e-6}, "sampling rate"),
    ({"noise_multiplier": 1, "sampling_rate": 0.1, "steps": 0, "delta": 1e-6}, "steps"),
    ({"noise_multiplier": 1, "sampling_rate": 0.1, "steps": 10, "delta": 1.0}, "delta"),
])
def test_bad_arguments(kwargs, message):
    with pytest.raises(DprecError, match=message):
        gaussian_epsilons(**kwargs)


def test_cli_table_json_and_gaussian():
    runner = CliRunner()
    res = runner.invoke(app, ["privacy", "table", "privrec", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert set(doc[0]) == {"M", "q", "delta", "paper", "reproduced", "rdp_without_replacement",
                           "pld_poisson", "adjacency"}
    assert doc[0]["adjacency"] == {"paper": "replace_one", "reproduced": "replace_one",
                                   "rdp_without_replacement": "replace_one",
                                   "pld_poisson": "add_remove_one"}
    res = runner.invoke(app, ["privacy", "gaussian", "--noise-multiplier", "1",
                              "--sampling-rate", "0.01", "--steps", "100"])
    assert res.exit_code == 0 and "pld_poisson" in res.output
    assert "add_remove_one" in res.output and "replace_one" in res.output
    res = runner.invoke(app, ["privacy", "gaussian", "--target-epsilon", "2",
                              "--sampling-rate", "0.01", "--steps", "100"])
    assert res.exit_code == 0 and "noise multiplier" in res.output
    bad = runner.invoke(app, ["privacy", "gaussian"])
    assert bad.exit_code == 2 and "exactly one of" in " ".join(bad.output.split())
    bad = runner.invoke(app, ["privacy", "table", "nope"])
    assert bad.exit_code == 2 and "unknown table" in bad.output


def test_privrec_two_queries():
    from dprec.systems.privrec.accounting import privrec_effective_noise
    assert privrec_effective_noise(1.0, 0.7, b_sensitivity_over_m=2.0) == pytest.approx(1.0)
    z = privrec_effective_noise(1.0, 0.7)
    assert z == pytest.approx(1 / np.sqrt(0.3 + 0.7 / 4))
    with pytest.raises(DprecError, match="h must be in"):
        privrec_effective_noise(1.0, 1.0)


def test_pld_poisson_grid_is_fine_enough():
    """The 1e-3 grid overstated eps by 4% here; the default must be within 0.1% of 2e-5."""
    fine = pld_poisson_epsilon(1.0, 5 / 4800, 1000, 1e-4, value_discretization_interval=2e-5)
    ours = pld_poisson_epsilon(1.0, 5 / 4800, 1000, 1e-4)
    assert fine <= ours <= fine * 1.001
    assert ADJACENCY["pld_poisson"] is Adjacency.ADD_REMOVE_ONE
