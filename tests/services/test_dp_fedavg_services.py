"""dp-fedavg over the services on the cryptographic secure sum (issue 24, "Done when"):
``dprec simulate dp-fedavg --transport http`` gives the in-process metrics, privacy JSON and
diagnostics bit for bit, with Poisson-sampled clients (every client uploads every round)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from dprec.cli import app

TIMINGS = {"seconds_by_role"}
"""Diagnostics that are wall-clock timings (they differ from run to run)."""


@pytest.mark.slow  # a server and a proxy, one sealed upload per client and round
def test_simulate_dp_fedavg_gives_the_same_model_and_privacy_over_both_transports(tmp_path):
    args = ["simulate", "dp-fedavg", "--dataset", "synthetic-150x80", "--negatives", "20",
            "--param", "rounds=2", "--param", "rate=0.5", "--param", "min_honest=120",
            "--epsilon", "2", "--seeds", "1", "--json", "--out", str(tmp_path)]
    docs = {}
    for transport in ("inproc", "http"):
        res = CliRunner().invoke(app, [*args, "--transport", transport])
        assert res.exit_code == 0, res.output[-3000:]
        docs[transport] = json.loads(res.stdout.strip().splitlines()[-1])
    a, b = docs["inproc"], docs["http"]
    for key in ("metrics", "per_seed", "privacy", "parameters", "dataset", "protocol"):
        assert a[key] == b[key], key
    strip = [{k: v for k, v in d.items() if k not in TIMINGS} for d in a["diagnostics"]]
    assert strip == [{k: v for k, v in d.items() if k not in TIMINGS}
                     for d in b["diagnostics"]]
    assert len(b["diagnostics"][0]["simulation_only"]["sampled_per_round"]) == 2
    privacy = b["privacy"]
    assert privacy["model"] == "secure-sum" and privacy["levels"]["user"]["epsilon"] <= 2.0
    assert privacy["threat_model_assumptions"]["server_proxy_collusion"] is False
    assert privacy["threat_model_assumptions"]["min_honest"] == 120
    assert privacy["secure_sum"]["dimension"] == 80 * 2
