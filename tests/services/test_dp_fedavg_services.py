"""dp-fedavg over the services on the cryptographic secure sum (issue 24, "Done when"):
``dprec simulate dp-fedavg --transport http`` runs the clients as devices (each its coin,
rounding and share from its own CSPRNG), so its numbers are not the seeded in-process
run's: the privacy JSON and the public diagnostics are the same, the metrics have the same
structure, and the devices sample at the accounted rate (every client uploads every round)."""

from __future__ import annotations

import json

import pytest
from device_runs import same_structure
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
    for key in ("privacy", "parameters", "dataset", "protocol"):
        assert a[key] == b[key], key
    same_structure(a, b)
    drawn = TIMINGS | {"simulation_only"}  # the devices' coins are their own CSPRNG's
    strip = [{k: v for k, v in d.items() if k not in drawn} for d in a["diagnostics"]]
    assert strip == [{k: v for k, v in d.items() if k not in drawn}
                     for d in b["diagnostics"]]
    sampled = b["diagnostics"][0]["simulation_only"]["sampled_per_round"]
    assert len(sampled) == 2
    # the devices' realised rate is the accounted one (rate 0.5): within 5 sd of n q rounds
    n = b["diagnostics"][0]["n_clients"]
    assert abs(sum(sampled) - 0.5 * n * 2) <= 5 * (0.25 * n * 2) ** 0.5, (sampled, n)
    privacy = b["privacy"]
    assert privacy["model"] == "secure-sum" and privacy["levels"]["user"]["epsilon"] <= 2.0
    assert privacy["threat_model_assumptions"]["server_proxy_collusion"] is False
    assert privacy["threat_model_assumptions"]["min_honest"] == 120
    assert privacy["secure_sum"]["dimension"] == 80 * 2
