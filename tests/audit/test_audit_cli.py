"""``dprec audit``: --list, one audit as JSON, errors, and --all's files (tiny trials)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from dprec.cli import app

runner = CliRunner()


def test_list_names_mechanisms_protocols_and_systems():
    res = runner.invoke(app, ["audit", "--list"])
    assert res.exit_code == 0
    for name in ("bitflip-ap", "laplace-rr", "shuffle-binary", "dplcf-user",
                 "dp-privrec-canaries", "dplcf-sp"):
        assert name in res.output


def test_json_has_the_issue_keys():
    res = runner.invoke(app, ["audit", "laplace-rr-svd", "--param", "eps1=1", "--param",
                              "eps2=1", "--trials", "3000", "--alpha", "0.05", "--json"])
    # the published eps1 + eps2 is violated: the audit fails (exit 1) and says so
    assert res.exit_code == 1, res.output
    doc = json.loads(res.stdout)
    assert doc["claimed_epsilon"] == 2.0 and doc["true_epsilon"] == "inf"
    assert doc["confidence"] == 0.95 and doc["trials"] == 3000 and doc["level"] == "event"
    assert doc["empirical_lower"] > 2.0
    assert doc["violates_claim"] is True and doc["violation_expected"] is True


@pytest.mark.slow  # 2,000 audit trials through the CLI
def test_user_level_of_a_system_and_bad_input():
    res = runner.invoke(app, ["audit", "dplcf-sp", "--epsilon", "1", "--level", "user",
                              "--param", "n_items=40", "--trials", "2000"])
    assert res.exit_code == 0, res.output
    assert "dplcf-user (user)" in res.output and "ceiling" in res.output
    bad = runner.invoke(app, ["audit", "dplcf-sp", "--param", "nope=1", "--trials", "10"])
    assert bad.exit_code == 2 and "no option nope" in bad.output
    none = runner.invoke(app, ["audit"])
    assert none.exit_code == 2 and "--list" in none.output
