"""What the clients actually draw, checked against what the accountant assumed (issue 31 §5,
the two mutants of the privacy code that survived the suite):

- dpals' noise shares: the report reads the share parameter the clients' noise objects draw
  (never recomputes it) and ``min_honest`` such shares must carry the accounted ``mu``
  (the mutant "shares sized by n instead of min_honest" in ``dpals/plan.py`` fails here);
- dp-fedavg's sampling coin: the realised rate over all clients and rounds against the rate
  in the run's accounting events, by a two-sided binomial test at a false-alarm rate of
  1e-6 (the mutant "clients sample at twice the accounted rate" in ``dp_fedavg/client.py``
  fails here).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dprec.data.synthetic import synthetic
from dprec.errors import PrivacyParameterError
from dprec.systems.dpals.clients import DpalsClients
from dprec.systems.dpals.plan import run_plan
from dprec.systems.dpals.system import DpalsConfig
from dprec.systems.registry import make_system
from dprec.systems.reporting import check_shares

FALSE_ALARM = 1e-6
"""The probability that the sampling-rate test fails a correct client."""


def test_dpals_report_reads_the_share_the_clients_draw_and_it_covers_mu() -> None:
    """40 clients, min_honest 10: each share must be Sk(mu / 10), not Sk(mu / 40)."""
    train = synthetic(40, 40, 800, rng=2).binary()
    m = make_system("dpals", {"epsilon": "3", "weighting": "tail", "steps": "1",
                              "factors": "2", "k": "5", "min_honest": "10"})
    m.fit(train, np.random.default_rng(0))
    mechanisms = m.privacy_report().mechanisms
    assert {x["release"] for x in mechanisms} == {"item_statistics", "global_gramian",
                                                  "item_counts"}
    for mech in mechanisms:
        assert mech["share_mu"] == pytest.approx(mech["mu"] / 10, rel=1e-12), mech
        assert mech["share_mu"] == pytest.approx(mech["share_mu_assumed"], rel=1e-12)
        assert mech["honest_noise_mu"] >= mech["mu"] * (1 - 1e-9)


def test_the_drawn_share_is_what_the_clients_noise_objects_hold() -> None:
    """The report's share is the clients' ShareNoise parameter, whatever the plan says."""
    cfg = DpalsConfig(epsilon=3.0, weighting="tail", steps=1, factors=2, k=5,
                      min_honest=10)
    train = synthetic(40, 40, 800, rng=2).binary()
    plan = run_plan(cfg, 40, 40)
    clients = DpalsClients(train, np.arange(40), cfg, plan, 7, {})
    drawn = clients.drawn_share_mu()
    for rp in plan.rounds:
        for noise in clients.round_noise(rp):
            assert noise.mu_share == drawn[noise.release]
            assert noise.n == 40
    for r in plan.releases:
        assert drawn[r.name] * plan.min_honest == pytest.approx(r.mu(plan.multiplier),
                                                                 rel=1e-12)


def test_shares_that_do_not_reach_mu_are_refused() -> None:
    check_shares("counts", 10.0, 1.0, 10)
    with pytest.raises(PrivacyParameterError, match="less than the Sk"):
        check_shares("counts", 10.0, 10.0 / 40, 10)


def test_dp_fedavg_clients_sample_at_the_accounted_rate() -> None:
    """300 clients x 4 rounds = 1,200 coins at the accounted q = 0.25: the realised count
    must be consistent with Bin(1200, q) (two-sided, false alarm 1e-6). At 2q the count is
    about 600 against 300 +- 15: the test fails with certainty."""
    train = synthetic(300, 40, 6_000, rng=6).binary()
    model = make_system("dp-fedavg", {"rounds": 4, "rate": 0.25, "epsilon": 2.0,
                                      "factors": 1})
    model.fit(train, np.random.default_rng(1))
    events = model.privacy_report().extra["events"]["events"]
    rates = {e["event"]["sampling_probability"] for e in events}
    assert len(rates) == 1
    accounted = rates.pop()
    assert accounted == 0.25
    sampled = model.diagnostics()["simulation_only"]["sampled_per_round"]
    coins = train.shape[0] * len(sampled)
    assert len(sampled) == 4
    p = stats.binomtest(int(sum(sampled)), coins, accounted).pvalue
    assert p >= FALSE_ALARM, (f"realised rate {sum(sampled) / coins:.4f} against the "
                              f"accounted {accounted} (p = {p:.2g})")
