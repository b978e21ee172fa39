"""``dprec simulate`` gives the same result in process and over the HTTP services, for every
registered deployable family (issue 32 §6: one parametrised test in place of the copies in
each system's services tests).

A system whose services replay the simulation's seeded stream gives the same numbers bit for
bit (metrics, per-seed entries, privacy, parameters); one whose clients draw as devices
(:attr:`~dprec.protocol.deployment.Deployment.device_randomness`: the secure sum) gives the
same privacy, parameters and structure. Each case then checks what its system publishes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from device_runs import same_structure
from typer.testing import CliRunner

from dprec.cli import app
from dprec.systems.deployable import deployment, deployments

Doc = dict[str, Any]
SAME = ("metrics", "per_seed", "privacy", "parameters", "dataset", "protocol")
"""What a replayed run gives bit for bit."""
SAME_FOR_DEVICES = ("privacy", "parameters", "dataset", "protocol")
"""What a run whose clients draw as devices gives exactly (the rest: the same structure)."""
DRAWN_PARTICIPANTS = {"privrec"}
"""Its privacy report counts who took part in each round, whom the server's own CSPRNG
selects over the services: its case compares the guarantees and the threat model."""
TIMINGS = {"seconds_by_role"}


def _fmf(a: Doc, b: Doc, services: Path) -> None:
    assert a["schema"] == b["schema"] == 1


def _fmf_cells(a: Doc, b: Doc, services: Path) -> None:
    for d in (*a["diagnostics"], *b["diagnostics"]):
        del d["seconds_by_role"]  # wall time
    assert a["diagnostics"] == b["diagnostics"]
    assert a["parameters"]["cells"] == "assigned"


def _privrec(a: Doc, b: Doc, services: Path) -> None:
    privacy = b["privacy"]
    assert "trusted aggregator" in privacy["threat_model"]
    assert privacy["server"]["role"] == "trusted aggregator"
    assert privacy["true"]["epsilon"] == "inf"
    for key in ("system", "threat_model", "claimed", "mechanisms", "adjacency", "server",
                "rounds"):
        assert a["privacy"][key] == privacy[key], key
    assert {k: v["epsilon"] for k, v in a["privacy"]["levels"].items()} == {
        k: v["epsilon"] for k, v in privacy["levels"].items()}


def _dp_privrec(a: Doc, b: Doc, services: Path) -> None:
    privacy = b["privacy"]
    assert "trusted aggregator" in privacy["threat_model"]
    assert privacy["server"]["role"] == "trusted aggregator"
    assert privacy["server"]["adds_noise"] is True
    assert 0 < privacy["true"]["epsilon"] < 10


def _dp_pop(a: Doc, b: Doc, services: Path) -> None:
    privacy = b["privacy"]
    assert privacy["model"] == "secure-sum" and privacy["levels"]["user"]["epsilon"] <= 1.0
    assert privacy["adjacency"] == "zero_out"  # each device's noise share stays in the sum
    assert privacy["threat_model_assumptions"]["server_proxy_collusion"] is False
    ss = privacy["secure_sum"]
    assert (ss["m"], ss["gamma"], ss["batches"]) == (2, 1.0, 1)
    assert ss["contributors"] == privacy["threat_model_assumptions"]["min_honest"]
    assert ss["contributors"] == privacy["threat_model_assumptions"]["contributors"]
    assert ss["q"] == 2 ** ss["q_bits"]
    # issue 31: the server was handed the simulation's generator (PCG64), from which every
    # client's share was drawn; now it starts from its own CSPRNG and holds no PCG64 state
    held = [p for p in services.rglob("*") if p.is_file()]
    assert any(p.name == "server.log" for p in held)
    for p in held:
        assert b"PCG64" not in p.read_bytes() and b"bit_generator" not in p.read_bytes(), p


def _dpals(a: Doc, b: Doc, services: Path) -> None:
    privacy = b["privacy"]
    assert privacy["model"] == "secure-sum" and privacy["levels"]["user"]["epsilon"] <= 2.0
    assert privacy["threat_model_assumptions"]["server_proxy_collusion"] is False
    assert set(privacy["secure_sum"]) >= {"item_statistics", "global_gramian", "item_counts"}
    rounds = privacy["secure_sum"]["deployed_rounds"]
    assert [r["kind"] for r in rounds] == ["counts", "step", "step"]
    assert [r["dimension"] for r in rounds] == [80, 80 * 14 + 10, 80 * 14 + 10]
    _every_upload_proved_and_summed(b, b["diagnostics"][0]["n_clients"] * 3)


def _every_upload_proved_and_summed(b: Doc, uploads: int) -> None:
    """validity=prio3 is the default: every simulated device proved its uploads, drawn
    through the devices' one draw path (truncated shares), and none was refused."""
    assert b["privacy"]["validity"]["kind"] == "prio3"
    assert b["diagnostics"][0]["upload_outcomes"] == {"summed": uploads, "refused": 0,
                                                      "below_threshold": 0, "lost": 0}


def _dp_fedavg(a: Doc, b: Doc, services: Path) -> None:
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
    _every_upload_proved_and_summed(b, n * 2)


def _nothing_more(a: Doc, b: Doc, services: Path) -> None:
    pass


PRIVREC = ["--dataset", "synthetic-150x60", "--param", "rounds=3", "--param",
           "clients_per_round=10", "--param", "local_epochs=1", "--param", "finetune_epochs=1",
           "--param", "embedding_dim=8", "--param", "hidden_width=16", "--param",
           "hidden_layers=2"]
LDP_SVD = ["--dataset", "synthetic-300x200", "--param", "epochs=3", "--param", "factors=4",
           "--param", "rating_min=1", "--param", "rating_max=5", "--split", "user"]
CASES: list[tuple[str, list[str], Callable[[Doc, Doc, Path], None]]] = [
    ("dplcf-sp", ["--dataset", "synthetic-300x200", "--param", "neighbours=10"],
     _nothing_more),
    ("fmf-ldp", ["--dataset", "synthetic-300x200", "--param", "epochs=2", "--param", "k=10",
                 "--param", "shuffle_threshold=50"], _fmf),
    ("fmf-ldp", ["--dataset", "synthetic-150x60", "--negatives", "20", "--param",
                 "cells=assigned", "--param", "epochs=3", "--param", "k=10", "--param",
                 "shuffle_threshold=50"], _fmf_cells),
    ("ldp-svd", [*LDP_SVD, "--param", "mechanism=piecewise", "--param", "hide_items=true"],
     _nothing_more),
    ("laplace-rr-svd", LDP_SVD, _nothing_more),
    ("privrec", PRIVREC, _privrec),
    ("dp-privrec", PRIVREC, _dp_privrec),
    ("dp-pop", ["--dataset", "synthetic-300x200", "--param", "k=10", "--epsilon", "1"],
     _dp_pop),
    ("dpals", ["--dataset", "synthetic-150x80", "--negatives", "20", "--param", "k=5",
               "--param", "weighting=tail", "--epsilon", "2"], _dpals),
    ("dp-fedavg", ["--dataset", "synthetic-150x80", "--negatives", "20", "--param",
                   "rounds=2", "--param", "rate=0.5", "--param", "min_honest=120",
                   "--epsilon", "2"], _dp_fedavg),
]


def test_every_deployable_family_has_a_case():
    assert {deployment(system).name for system, _, _ in CASES} == {d.name for d in deployments()}


@pytest.mark.slow  # a server and a proxy per case, one request per client and round
@pytest.mark.parametrize("system, args, check", CASES,
                         ids=[f"{s}-{c.__name__.strip('_')}" for s, _, c in CASES])
def test_simulate_gives_the_same_result_over_both_transports(tmp_path, monkeypatch, system,
                                                             args, check):
    services = tmp_path / "services"
    monkeypatch.setenv("DPREC_SERVICES_DIR", str(services))
    docs = {}
    for transport in ("inproc", "http"):
        res = CliRunner().invoke(app, ["simulate", system, *args, "--seeds", "1", "--json",
                                       "--out", str(tmp_path), "--transport", transport])
        assert res.exit_code == 0, res.output[-3000:]
        docs[transport] = json.loads(res.stdout.strip().splitlines()[-1])
    a, b = docs["inproc"], docs["http"]
    assert (a["transport"], b["transport"]) == ("inproc", "http")
    if deployment(system).device_randomness:
        for key in SAME_FOR_DEVICES:
            if not (key == "privacy" and system in DRAWN_PARTICIPANTS):
                assert a[key] == b[key], key
        same_structure(a, b)
    else:
        for key in SAME:
            assert a[key] == b[key], key
    check(a, b, services)
