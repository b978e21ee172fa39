"""dpals over the services on the cryptographic secure sum (issue 24, "Done when"):
``dprec simulate dpals --transport http`` runs the clients as devices (their draws from
their own CSPRNGs and secret seeds), so its numbers are not the seeded in-process run's: it
gives the same privacy JSON and the same structure of metrics and diagnostics, over the DP
count round and the ALS rounds."""

from __future__ import annotations

import json

import pytest
from device_runs import same_structure
from typer.testing import CliRunner

from dprec.cli import app


@pytest.mark.slow  # a server and a proxy, one sealed upload per client and round
def test_simulate_dpals_gives_the_same_model_and_privacy_over_both_transports(tmp_path):
    args = ["simulate", "dpals", "--dataset", "synthetic-150x80", "--negatives", "20",
            "--param", "k=5", "--param", "weighting=tail", "--epsilon", "2", "--seeds", "1",
            "--json", "--out", str(tmp_path)]
    docs = {}
    for transport in ("inproc", "http"):
        res = CliRunner().invoke(app, [*args, "--transport", transport])
        assert res.exit_code == 0, res.output[-3000:]
        docs[transport] = json.loads(res.stdout.strip().splitlines()[-1])
    a, b = docs["inproc"], docs["http"]
    for key in ("privacy", "parameters", "dataset", "protocol"):
        assert a[key] == b[key], key
    same_structure(a, b)
    privacy = b["privacy"]
    assert privacy["model"] == "secure-sum" and privacy["levels"]["user"]["epsilon"] <= 2.0
    assert privacy["threat_model_assumptions"]["server_proxy_collusion"] is False
    assert set(privacy["secure_sum"]) >= {"item_statistics", "global_gramian", "item_counts"}
    rounds = privacy["secure_sum"]["deployed_rounds"]
    assert [r["kind"] for r in rounds] == ["counts", "step", "step"]
    assert [r["dimension"] for r in rounds] == [80, 80 * 14 + 10, 80 * 14 + 10]
