"""Statistics of private data that no DP event accounts for (issue 31 §5): the clipped
fraction, the median user norm, the contributed pairs, the sampled clients. A simulated run
keeps them under ``diagnostics.simulation_only`` with a note; no deployed server output
(its service diagnostics, its published model, its privacy report) carries them."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dprec.data.synthetic import synthetic
from dprec.systems.registry import make_system
from dprec.systems.reporting import SIMULATION_ONLY, SIMULATION_ONLY_NOTE

PRIVATE = {"clipped_fraction", "median_user_norm", "contributed_pairs", "contributed_items",
           "sampled_per_round"}
"""Names of the private statistics the simulation measures."""

CASES = {
    "dpals": ({"epsilon": "3", "weighting": "tail", "steps": "1", "factors": "2", "k": "5"},
              {"contributed_pairs", "clipped_fraction", "median_user_norm"}),
    "dp-fedavg": ({"rounds": 2, "rate": 0.5, "factors": 1}, {"sampled_per_round"}),
    "dp-pop": ({"aggregation": "trusted"}, {"contributed_items"}),
}


def _names(doc: object) -> set[str]:
    """Every key anywhere in a JSON document."""
    if isinstance(doc, dict):
        return set(doc) | {k for v in doc.values() for k in _names(v)}
    if isinstance(doc, list):
        return {k for v in doc for k in _names(v)}
    return set()


@pytest.fixture(scope="module")
def train():
    return synthetic(40, 40, 800, rng=2).binary()


@pytest.mark.parametrize("system", sorted(CASES))
def test_private_statistics_only_under_simulation_only(system, train) -> None:
    params, expected = CASES[system]
    model = make_system(system, params)
    model.fit(train, np.random.default_rng(0))
    diag = model.diagnostics()
    sim = diag[SIMULATION_ONLY]
    assert sim["note"] == SIMULATION_ONLY_NOTE and "never" in sim["note"]
    assert expected <= set(sim)
    public = {k: v for k, v in diag.items() if k != SIMULATION_ONLY}
    assert not _names(public) & PRIVATE
    report = model.privacy_report().to_json()
    assert not _names(report) & PRIVATE
    assert not any(name in json.dumps(report) for name in PRIVATE)


def test_the_deployed_servers_outputs_carry_none_of_them(train) -> None:
    """What each server process reports over the services (its diagnostics) and publishes
    (its model) holds no private statistic."""
    from dprec.systems.dp_fedavg.plan import plan_of as fedavg_plan
    from dprec.systems.dp_fedavg.serve import SERVING as FEDAVG
    from dprec.systems.dp_fedavg.server import FedAvgServer
    from dprec.systems.dp_fedavg.system import DpFedAvgConfig
    from dprec.systems.dp_pop.calibration import calibrate
    from dprec.systems.dp_pop.serve import SERVING as POP
    from dprec.systems.dp_pop.server import PopularityServer
    from dprec.systems.dp_pop.system import DpPopConfig
    from dprec.systems.dpals.plan import run_plan
    from dprec.systems.dpals.serve import SERVING as DPALS
    from dprec.systems.dpals.server import DpalsServer
    from dprec.systems.dpals.system import DpalsConfig

    n, d = train.shape
    c = DpalsConfig(epsilon=3.0, weighting="tail", steps=1, factors=2, k=5)
    plan = run_plan(c, d, n)
    dpals = DpalsServer(plan, c.factors, c.reg, c.unobserved_weight, c.clip, c.rhs_weight,
                        c.init_scale)
    f = DpFedAvgConfig(rounds=2, rate=0.5, factors=1)
    fp = fedavg_plan(f, d, n)
    fed = FedAvgServer(d, f.factors, f.lr, f.reg, f.server_steps, f.init_scale, fp.gamma,
                       f.rate * n, None, fp.params, fp.min_honest, n)
    cal = calibrate(DpPopConfig(), d, n)
    pop = PopularityServer(d, n, cal.min_honest, cal.params, cal.share)
    for serving, role in ((DPALS, dpals), (FEDAVG, fed), (POP, pop)):
        out = serving.diagnostics(role)
        assert set(out) <= {"contributors", "batches"}, out
        assert not set(out) & PRIVATE
