"""dpals' count-shaped options (issue 33 §3): the head items a run trains on and the
frequency-scaled regularisation, both post-processing of the DP counts; the count round they
switch on is accounted, the sensitivities do not change, and every path (direct loop, round
engine, a device's own vector) applies them the same way."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

from dprec.data.synthetic import synthetic
from dprec.errors import InvalidParameterError
from dprec.systems.dpals.client import contributions, restrict_to
from dprec.systems.dpals.frequency import head_mask, item_regularisation, uses_counts
from dprec.systems.dpals.plan import run_plan
from dprec.systems.dpals.server import solve_items
from dprec.systems.dpals.system import DpalsConfig
from dprec.systems.registry import make_system


def _train(users: int = 60, items: int = 80, n: int = 2_000, seed: int = 5) -> sp.csr_matrix:
    return synthetic(users, items, n, rng=seed).binary()


def test_the_head_is_the_largest_counts_with_ties_by_the_smaller_item_id() -> None:
    counts = np.array([5.0, 9.0, 5.0, 1.0, 9.0, 5.0])
    np.testing.assert_array_equal(np.flatnonzero(head_mask(counts, 3)), [0, 1, 4])
    np.testing.assert_array_equal(np.flatnonzero(head_mask(counts, 4)), [0, 1, 2, 4])
    assert head_mask(counts, None) is None and head_mask(counts, 6) is None


def test_frequency_scaled_reg_keeps_the_count_weighted_total_and_grows_with_the_count() -> None:
    counts = np.array([0.0, 3.0, 30.0, -2.0, 300.0])  # a noisy count can be negative
    assert item_regularisation(2.0, counts, 0.0) == 2.0
    assert item_regularisation(2.0, None, 0.5) == 2.0
    reg = item_regularisation(2.0, counts, 0.5)
    n1 = np.maximum(counts, 0) + 1
    assert np.sum(n1 * reg) == pytest.approx(2.0 * n1.sum())
    order = np.argsort(counts, kind="stable")
    assert (np.diff(reg[order]) >= 0).all() and reg[4] > 2.0 > reg[0]


def test_a_head_restriction_contributes_to_head_items_only_within_the_budget() -> None:
    train = _train()
    counts = np.asarray(train.sum(axis=0)).ravel()
    head = head_mask(counts, 20)
    assert head is not None
    for weighting in ("uniform", "tail", "adaptive"):
        cfg = DpalsConfig(weighting=weighting, k=5, exponent=-0.1, head_items=20)
        w = contributions(train, cfg, seed=3, counts=counts, max_items=10)
        assert w.nnz > 0 and head[w.indices].all()
        assert (w.multiply(w).sum(axis=1) <= 5 + 1e-9).all()  # sum_j c_j^2 <= k
        assert (np.diff(w.indptr) <= 10).all()
    kept = restrict_to(train, head)
    assert kept.nnz == int(train[:, head].nnz) and restrict_to(train, None) is train


def test_the_item_solve_takes_one_reg_per_item_and_zeroes_the_tail() -> None:
    rng = np.random.default_rng(0)
    stats = rng.integers(0, 50, size=(6, 5)).astype(float)
    stats[:, 0] += 100.0
    stats[:, 2] += 100.0
    gram = np.array([300.0, 10.0, 300.0])
    one = solve_items(stats, gram, 10.0, 2, 3.0, 0.1)
    same = solve_items(stats, gram, 10.0, 2, np.full(6, 3.0), 0.1)
    np.testing.assert_allclose(one, same, rtol=1e-12)
    head = np.array([True, False, True, True, False, True])
    cut = solve_items(stats, gram, 10.0, 2, np.full(6, 3.0), 0.1, head=head)
    np.testing.assert_array_equal(cut[~head], 0.0)
    np.testing.assert_allclose(cut[head], one[head], rtol=1e-12)
    more = solve_items(stats, gram, 10.0, 2, np.array([3.0, 3, 30, 3, 3, 3]), 0.1)
    assert np.linalg.norm(more[2]) < np.linalg.norm(one[2])


@pytest.mark.parametrize("option", [{"head_items": 30}, {"reg_exponent": 0.5}])
def test_either_option_switches_on_an_accounted_count_round_and_keeps_the_sensitivities(
        option: dict[str, float]) -> None:
    base = DpalsConfig(epsilon=2.0, steps=2, factors=3, k=5)
    cfg = replace(base, **option)
    assert not uses_counts(base) and uses_counts(cfg)
    plain, shaped = run_plan(base, 80, 60), run_plan(cfg, 80, 60)
    assert [r.kind for r in shaped.rounds] == ["counts", "step", "step"]
    names = {r.name: r for r in shaped.releases}
    assert set(names) == {"item_statistics", "global_gramian", "item_counts"}
    for r in plain.releases:  # the statistics' sensitivities do not move
        assert (names[r.name].l1, names[r.name].l2) == (r.l1, r.l2)
    assert shaped.multiplier > plain.multiplier  # the counts take their share of epsilon


@pytest.mark.parametrize("aggregation", ["secure", "trusted"])
def test_a_head_run_publishes_zero_tail_factors_and_reports_the_count_round(
        aggregation: str) -> None:
    train = _train()
    m = make_system("dpals", {"epsilon": "4", "steps": "2", "factors": "3", "k": "5",
                              "head_items": "25", "reg_exponent": "0.3",
                              "aggregation": aggregation})
    m.fit(train, np.random.default_rng(0))
    V = m.item_factors
    zero = ~V.any(axis=1)
    assert zero.sum() == 80 - 25 and np.isfinite(V).all()
    report = m.privacy_report()
    assert [mech["release"] for mech in report.mechanisms][-1] == "item_counts"
    assert 3.99 <= report.extra["levels"]["user"]["epsilon"] <= 4.0
    assert "25 items of largest DP count" in report.extra["contribution_bound"]
    scores = m.score(train[:5])
    np.testing.assert_array_equal(scores[:, zero], 0.0)


def test_the_round_engine_and_the_direct_loop_take_the_same_head() -> None:
    """The secure path's server picks its head from the released counts; the clients pick
    theirs from the broadcast: the same items, so no client contributes to a tail item."""
    train = _train()
    m = make_system("dpals", {"epsilon": "4", "steps": "1", "factors": "2", "k": "5",
                              "head_items": "25"})
    m.fit(train, np.random.default_rng(1))
    assert m.diagnostics()["simulation_only"]["contributed_pairs"] > 0
    assert (~m.item_factors.any(axis=1)).sum() == 55


@pytest.mark.parametrize("bad", [{"head_items": 0}, {"reg_exponent": 3.0},
                                 {"reg_exponent": float("nan")}])
def test_bad_options_are_refused(bad: dict[str, float]) -> None:
    with pytest.raises(InvalidParameterError):
        DpalsConfig(**bad)


@pytest.mark.parametrize("option", [{}, {"head_items": 30}, {"reg_exponent": -0.5},
                                    {"weighting": "tail"}])
def test_the_deployment_counts_the_rounds_the_plan_runs(option: dict[str, object]) -> None:
    from dprec.systems.dpals.deploy import DEPLOYMENT

    cfg = replace(DpalsConfig(epsilon=2.0, steps=2, factors=3, k=5), **option)
    assert DEPLOYMENT.rounds(cfg) == len(run_plan(cfg, 80, 60).rounds)
