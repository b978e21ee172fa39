"""DPLCF's poisoning defences (issue 26 §2, §4) as the server runs them: selected by
``--param aggregator=`` in process and by the services' ``--aggregator``; bit for bit the
plain mean on honest uploads; the all-ones and promotion attacks refused or dropped; the
history cap enforced by the client, with its privacy cost reported."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

from dprec.data.synthetic import synthetic
from dprec.errors import DprecError
from dprec.mechanisms.bitflip import BitFlip
from dprec.privacy.events import BitFlipDpEvent, EventLog
from dprec.privacy.guarantee import reported_epsilon
from dprec.protocol import aggregation
from dprec.protocol.poisoning import Poisoning, poison
from dprec.random import derive_generator
from dprec.services.roles import server_role
from dprec.systems.deployable import ProtocolInfo
from dprec.systems.dplcf.bit_screens import ones_counts, ones_range, screen_threshold
from dprec.systems.dplcf.client import (
    cap_binds,
    cap_history,
    displaced_bit_event,
    upload_events,
)
from dprec.systems.dplcf.defences import (
    DPLCF_AGGREGATORS,
    BitRangeAggregator,
    BitScreenAggregator,
    RangeScreenAggregator,
)
from dprec.systems.dplcf.server import SimilarityServer
from dprec.systems.fmf.defences import FMF_AGGREGATORS
from dprec.systems.registry import make_system

N_USERS, N_ITEMS = 400, 300
DEFENCES = ("dplcf-range", "dplcf-screen", "dplcf-range+screen")


def make_aggregator(name, table=DPLCF_AGGREGATORS):
    return aggregation.make_aggregator(name, table)


@pytest.fixture(scope="module")
def train():
    return synthetic(N_USERS, N_ITEMS, 12000, rng=0).binary()


def _fit(train, params: dict, poisoning: Poisoning | None = None):
    return _fit_named("dplcf-sp", train, params, poisoning)


def _fit_named(name: str, train, params: dict, poisoning: Poisoning | None = None):
    model = make_system(name, params)
    if poisoning is not None:
        poison(model, poisoning, derive_generator(3, "poison"))
    model.fit(train, derive_generator(7, "system"))
    return model


@pytest.mark.parametrize("defence", DEFENCES)
def test_honest_runs_are_the_mean_bit_for_bit(train, defence):
    mean = _fit(train, {})
    guarded = _fit(train, {"aggregator": defence})
    assert guarded.diagnostics()["uploads_counted"] == N_USERS
    assert guarded.diagnostics().get("uploads_refused", 0) == 0
    assert guarded.diagnostics().get("uploads_dropped", 0) == 0
    assert np.array_equal(mean.broadcast.indices, guarded.broadcast.indices)
    assert np.array_equal(mean.broadcast.sims, guarded.broadcast.sims)
    assert mean.privacy_report().to_json() == guarded.privacy_report().to_json()


@pytest.mark.parametrize("strategy", ["untargeted", "promote"])
def test_the_range_refuses_the_plain_attacks(train, strategy):
    attack = Poisoning(0.1, strategy)
    plain = _fit(train, {}, attack)
    guarded = _fit(train, {"aggregator": "dplcf-range"}, attack)
    assert guarded.diagnostics()["uploads_refused"] == 40  # every attacker, no honest one
    assert guarded.diagnostics()["uploads_counted"] == N_USERS - 40
    assert not np.array_equal(plain.broadcast.indices, guarded.broadcast.indices)


def _law(n_items: int):
    mech = make_system("dplcf-sp").mechanism
    return SimilarityServer(n_items, mech, "unbiased", 20, False).upload_law()


def test_the_adaptive_attack_passes_the_range(train):
    bounds = ones_range(_law(N_ITEMS), 1e-9)
    for strategy in ("untargeted", "promote"):
        model = _fit(train, {"aggregator": "dplcf-range"},
                     Poisoning(0.1, strategy, ones_range=(bounds.low, bounds.high)))
        assert model.diagnostics()["uploads_refused"] == 0


def test_the_screen_drops_a_large_promotion_coalition(train):
    model = _fit(train, {"aggregator": "dplcf-screen:10"}, Poisoning(0.25, "promote"))
    assert model.diagnostics()["uploads_dropped"] >= 100  # the 100 attackers (and a few more)
    assert model.diagnostics()["uploads_dropped"] <= 110


def test_aggregators_by_name_and_spec():
    assert isinstance(make_aggregator("dplcf-range"), BitRangeAggregator)
    assert make_aggregator("dplcf-range:0.01").rate == 0.01
    assert make_aggregator("dplcf-screen:15").z == 15
    both = make_aggregator("dplcf-range+screen")
    assert isinstance(both, RangeScreenAggregator) and isinstance(both, BitScreenAggregator)
    for name in DEFENCES:
        agg = make_aggregator(name)
        assert make_aggregator(agg.spec).spec == agg.spec
        with pytest.raises(DprecError, match="bit uploads"):
            agg.cell_totals(np.zeros(1, np.int64), np.zeros(1), 1)
        with pytest.raises(DprecError, match="public law"):
            list(agg.uploads([]))
    with pytest.raises(DprecError, match="aggregator"):
        make_system("dplcf-sp", {"aggregator": "nope"})


def test_the_services_server_runs_the_named_defence():
    cfg = make_system("dplcf-sp").config
    info = ProtocolInfo("dplcf-sp", 50, cfg, "dplcf-range:0.001")
    role = server_role(info, make_aggregator(info.aggregator))
    assert isinstance(role.aggregator, BitRangeAggregator)
    assert role.aggregator.rate == 0.001 and role.aggregator.law.n_items == 50
    with pytest.raises(DprecError, match="history_cap"):
        server_role(ProtocolInfo("dplcf-sp", 50, replace(cfg, history_cap=10)),
                    make_aggregator("mean"))
    with pytest.raises(DprecError, match="--aggregator"):
        server_role(ProtocolInfo("dplcf-sp", 50, replace(cfg, aggregator="dplcf-screen")),
                    make_aggregator("mean"))


def test_cap_history_keeps_a_random_subset_and_draws_nothing_under_the_cap():
    hist = sp.csr_matrix((np.random.default_rng(0).random((30, 40)) < 0.3).astype(np.float32))
    lengths = np.diff(hist.indptr)
    rng = np.random.default_rng(1)
    state = rng.bit_generator.state
    assert cap_history(hist, int(lengths.max()), rng) is not None
    assert rng.bit_generator.state == state  # nobody over the cap: no draw
    capped = cap_history(hist, 8, rng)
    new = np.diff(capped.indptr)
    assert (new == np.minimum(lengths, 8)).all()
    assert (capped.multiply(hist) != capped).nnz == 0  # a subset of each history
    under = lengths <= 8
    assert (capped[under] != hist[under]).nnz == 0


@pytest.mark.parametrize("name", ["dplcf-sp", "dplcf-oue"])
def test_a_binding_cap_is_logged_and_doubles_the_event_level(train, name):
    # issue 32 §4: the capped users' second bit is an event in the log, so the accountant's
    # event level (privacy.true) is the doubled one; the report agrees with itself
    free = _fit_named(name, train, {}).privacy_report().to_json()
    loose = _fit_named(name, train, {"history_cap": N_ITEMS}).privacy_report().to_json()
    assert loose == free  # no binding cap: nothing changes
    model = _fit_named(name, train, {"history_cap": 5})
    tight = model.privacy_report().to_json()
    assert tight["true"] == tight["levels"]["event"]
    assert tight["true"]["epsilon"] == reported_epsilon(2 * free["true"]["epsilon"])
    assert tight["true"]["sides"] == "two"
    assert tight["levels"]["user"]["epsilon"] == free["levels"]["user"]["epsilon"]
    event = model.mechanism.dp_event()
    per_interaction = model.events.counts(event, "interaction", "event")
    lengths = np.diff(train.indptr)
    assert model.diagnostics()["capped_users"] == (lengths > 5).sum() > 0
    assert (per_interaction == np.where(lengths >= 5, 2, 1)).all()
    assert (model.events.counts(event, "interaction", "user") == N_ITEMS).all()


def test_a_user_at_exactly_the_cap_is_logged_with_two_bits(train):
    # nobody is cut at L = the shortest history, but those at L have a neighbour (one item
    # more) that is cut back to L: two bits for them, one for the rest
    lengths = np.diff(train.indptr)
    cap = int(lengths.min())
    model = _fit(train, {"history_cap": cap})
    assert model.diagnostics()["capped_users"] == (lengths > cap).sum()
    per_interaction = model.events.counts(model.mechanism.dp_event(), "interaction", "event")
    assert (per_interaction[lengths == cap] == 2).all() and (lengths == cap).any()
    report = model.privacy_report().to_json()
    assert report["true"] == report["levels"]["event"] and report["true"]["epsilon"] == 2.0


def test_a_binding_cap_breaks_the_one_sided_flip(train):
    # the asymmetric flip (p = 1) protects presence only; the bit a capped history gives
    # up is an absence change, which an observed 0 reveals: no finite epsilon
    free = _fit_named("dplcf-ap", train, {}).privacy_report().to_json()
    assert free["true"]["epsilon"] == 1.0 and free["true"]["sides"] == "one"
    tight = _fit_named("dplcf-ap", train, {"history_cap": 5}).privacy_report().to_json()
    assert tight["true"] == tight["levels"]["event"]
    assert tight["true"]["epsilon"] == "inf" and tight["true"]["sides"] == "none"
    assert "BitFlipDpEvent(p=0.632121, q=0)" in tight["true"]["mechanism"]


def test_upload_events_record_the_displaced_bit_of_capped_users():
    sym, asym = BitFlip.symmetric(1.0), BitFlip.asymmetric(1.0)
    assert displaced_bit_event(sym) == sym.dp_event()  # two-sided: a second copy
    assert displaced_bit_event(BitFlip.oue(1.0)) == BitFlip.oue(1.0).dp_event()
    assert displaced_bit_event(asym) == BitFlipDpEvent(1.0 - asym.q, 0.0)
    ids = np.array([10, 11, 12, 13])
    sent = upload_events(sym, ids, np.array([False, True, False, True]), 50)
    assert [(s.users.tolist(), s.count, s.unit) for s in sent] == [
        ([10, 12], 50, "interaction"), ([11, 13], 49, "interaction"),
        ([11, 13], 1, "interaction")]
    alone = upload_events(sym, ids, np.zeros(4, bool), 50)
    assert len(alone) == 1 and alone[0].users.tolist() == ids.tolist()
    log = EventLog(14)
    for s in sent:
        log.record(0, s.event, s.users, s.count, s.unit)
    assert log.counts(sym.dp_event(), "interaction", "event")[10:].tolist() == [1, 2, 1, 2]
    assert log.counts(sym.dp_event(), "interaction", "user")[10:].tolist() == [50] * 4


def test_the_cap_binds_from_exactly_the_cap_and_never_above_the_item_count():
    hist = sp.csr_matrix(np.array([[1, 1, 0, 0], [1, 1, 1, 0], [1, 0, 0, 0], [1, 1, 1, 1]],
                                  np.float32))
    assert cap_binds(hist, 2).tolist() == [True, True, False, True]
    assert cap_binds(hist, None).tolist() == [False] * 4
    assert cap_binds(hist, 4).tolist() == [False] * 4  # no history exceeds N = 4 items


def test_a_binding_cap_keeps_its_privacy_log_under_the_guarded_range(train):
    # every upload of the capped run is honest within L = 5: the range refuses none
    tight = _fit(train, {"history_cap": 5})
    assert tight.diagnostics()["capped_users"] > 0
    guarded = _fit(train, {"history_cap": 5, "aggregator": "dplcf-range:0.01"})
    assert guarded.diagnostics()["uploads_refused"] <= 0.05 * N_USERS
    assert guarded.privacy_report().to_json()["true"] == tight.privacy_report().to_json()["true"]


def test_screen_shaped_attackers_pass_the_screen(train):
    law = _law(N_ITEMS)
    threshold = screen_threshold(N_USERS, N_ITEMS, law.p, 10, 1e-9)
    model = _fit(train, {"aggregator": "dplcf-screen:10"},
                 Poisoning(0.25, "promote", screen=(10, threshold)))
    assert model.diagnostics()["uploads_dropped"] < 100  # not the 100 attackers any more


def test_range_shaped_attack_rows_are_inside_the_range(train):
    bounds = ones_range(_law(N_ITEMS), 1e-9)
    model = make_system("dplcf-sp")
    hook = poison(model, Poisoning(0.1, "promote", ones_range=(bounds.low, bounds.high)),
                  derive_generator(3, "poison"))
    seen = []
    inner = SimilarityServer.aggregate

    def spy(self, batches, round):
        batches = list(batches)
        seen.extend(batches)
        return inner(self, batches, round)

    SimilarityServer.aggregate = spy
    try:
        model.fit(train, derive_generator(7, "system"))
    finally:
        SimilarityServer.aggregate = inner
    packed = np.concatenate([m.packed for m in seen])
    bad = packed[hook.clients.attackers]
    assert (ones_counts(bad) == bounds.low).all()  # 20 chosen ones padded up to low
    assert len({row.tobytes() for row in bad}) == len(bad)  # each with its own draws


@pytest.mark.parametrize("cell_estimate", ["trimmed", "median-of-means:3"])
def test_a_dplcf_server_refuses_fmf_cell_estimates_at_start(cell_estimate):
    """A DPLCF server given FMF-LDP's trimmed or median-of-means estimate once ran the
    plain mean under that name; it now refuses before any round (in process and services)."""
    cfg = make_system("dplcf-sp").config
    with pytest.raises(DprecError, match="per-cell means"):
        server_role(ProtocolInfo("dplcf-sp", 50, cfg, cell_estimate),
                    make_aggregator(cell_estimate, FMF_AGGREGATORS))
