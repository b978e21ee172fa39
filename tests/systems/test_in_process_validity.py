"""dpals and dp-fedavg with the in-process validity check (``validity=prio3``, the default):
honest runs are those of an unchecked run bit for bit and build no client's own vector; a
simulated malicious client's out-of-range vector is refused in every round (and counted)
with the check, summed without it."""

from __future__ import annotations

import numpy as np
import pytest

from dprec.data.synthetic import synthetic
from dprec.errors import DprecError
from dprec.protocol.secure_sum.vdaf.contribution import ContributionCheck
from dprec.protocol.sum_poisoning import SumPoisoning, poison_sum
from dprec.random import derive_generator
from dprec.systems.registry import make_system

N, D = 60, 40


@pytest.fixture(scope="module")
def train():
    return synthetic(N, D, 1200, rng=5).binary()


def _fit(train, validity, poisoning=None):
    model = make_system("dpals", {"validity": validity, "min_honest": N - 1, "steps": 2})
    if poisoning is not None:
        poison_sum(model, poisoning, derive_generator(3, "poison"))
    return model.fit(train, derive_generator(7, "system", "dpals"))


@pytest.mark.slow  # two fits with and without proofs
def test_the_check_leaves_honest_runs_unchanged(train):
    on, off = _fit(train, "prio3"), _fit(train, "none")
    np.testing.assert_array_equal(on.item_factors, off.item_factors)
    assert on.diagnostics()["upload_outcomes"]["summed"] == 2 * N
    assert on.diagnostics()["refused_reasons"] == {}


def test_the_out_of_range_client_is_refused_with_the_check_and_summed_without(train):
    attack = SumPoisoning(1 / N, "out-of-range")
    on, off = _fit(train, "prio3", attack), _fit(train, "none", attack)
    assert on.diagnostics()["upload_outcomes"] == {"summed": 2 * (N - 1), "refused": 2,
                                                   "below_threshold": 0, "lost": 0}
    assert on.diagnostics()["refused_reasons"] == {"validity: range": 2}
    assert off.diagnostics()["upload_outcomes"]["summed"] == 2 * N
    clean = _fit(train, "none")
    moved_on = np.abs(on.item_factors - clean.item_factors).max()
    moved_off = np.abs(off.item_factors - clean.item_factors).max()
    assert moved_off > 5 * moved_on


def test_validity_takes_prio3_or_none():
    for system in ("dpals", "dp-pop", "dp-fedavg"):
        with pytest.raises(DprecError, match="validity must be 'prio3' or 'none'"):
            make_system(system, {"validity": "snip"})


@pytest.mark.slow  # three fits with and without proofs
def test_a_poisoned_blocks_total_is_the_sum_of_its_rows(train):
    """A k-hot attacker passes the check: the checked run sums the rows, the unchecked one
    the block's rewritten total, and they agree bit for bit."""
    attack = SumPoisoning(1 / N, "k-hot", targets=3)
    on, off = _fit(train, "prio3", attack), _fit(train, "none", attack)
    assert on.diagnostics()["upload_outcomes"]["refused"] == 0
    np.testing.assert_array_equal(on.item_factors, off.item_factors)
    assert not np.array_equal(on.item_factors, _fit(train, "none").item_factors)


@pytest.mark.parametrize("system, params", [("dpals", {"steps": 1}), ("dp-fedavg", {"rounds": 2})])
def test_the_default_proves_yet_honest_runs_build_no_client_vector(train, monkeypatch, system,
                                                                    params):
    """prio3 is the default; in process, with only honest simulated clients, no client's own
    vector is built or checked (the block totals are summed, as with none) and the numbers
    are those of validity=none bit for bit."""
    checked_rows = []
    refusals = ContributionCheck.refusals

    def counting(self, ys):
        checked_rows.append(len(ys))
        return refusals(self, ys)

    monkeypatch.setattr(ContributionCheck, "refusals", counting)
    models = {}
    for validity in ("default", "none"):
        extra = {} if validity == "default" else {"validity": "none"}
        model = make_system(system, {"min_honest": N - 1, **params, **extra})
        models[validity] = model.fit(train, derive_generator(7, "system", system))
    assert models["default"].config.validity == "prio3"
    assert checked_rows == []
    np.testing.assert_array_equal(models["default"].score(train), models["none"].score(train))
    rounds = params.get("steps", params.get("rounds"))
    assert models["default"].diagnostics()["upload_outcomes"]["summed"] == rounds * N
    assert "validity" in models["default"].privacy_report().to_json()


@pytest.mark.parametrize("system, params", [("dpals", {"steps": 1}), ("dp-fedavg", {"rounds": 1})])
def test_the_report_adds_the_truncation_delta_of_every_round(train, system, params):
    """With proofs the honest shares are truncated: the report's delta_total is delta plus
    each round's (1 + e^eps) n (eta + eta_2), the terms published per round where they
    differ; without proofs there is no validity record."""
    reports = {}
    for validity in ("prio3", "none"):
        model = make_system(system, {"validity": validity, "min_honest": N - 1, **params})
        model.fit(train, derive_generator(7, "system", system))
        reports[validity] = model.privacy_report().to_json()
    assert "validity" not in reports["none"]
    record = reports["prio3"]["validity"]
    assert record["kind"] == "prio3" and record["truncation_delta"] > 0
    assert record["delta_total"] == pytest.approx(1e-6 + record["truncation_delta"])
    assert "within the round's clip plus the noise bound" in str(reports["prio3"])
