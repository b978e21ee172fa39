"""Laplace-SVD, Laplace-RR-SVD and LDP-SVD (seed 001; docs/architecture.md §3): what the
server sees, the privacy reports, hide_items, determinism and accuracy against nondp-svd."""

import math
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

import dprec.systems.ldp_svd.system as ldp_system
from dprec.errors import DprecError
from dprec.mechanisms.laplace_rr import LaplaceRR
from dprec.mechanisms.numeric import BinaryMechanism, LaplaceMechanism, PiecewiseMechanism
from dprec.models.funk_svd import FunkSVDConfig
from dprec.privacy.events import EventLog
from dprec.privacy.guarantee import reported_epsilon
from dprec.protocol.engine import run_protocol
from dprec.systems.ldp_svd import client, server
from dprec.systems.ldp_svd.messages import RatingReports, Scale
from dprec.systems.registry import SYSTEMS, make_system

P_FLOOR = 1e-4
SCALE = {"rating_min": 1, "rating_max": 5}
FAST = {"epochs": 5, "factors": 10, **SCALE}


def _ratings(n_users=300, n_items=120, n=9_000, seed=0) -> sp.csr_matrix:
    """Low-rank 1..5 ratings: clip(round(3.5 + b_u + b_i + U.V + noise))."""
    rng = np.random.default_rng(seed)
    u = rng.integers(0, n_users, n)
    i = rng.integers(0, n_items, n)
    bu, bi = rng.normal(0, 0.5, n_users), rng.normal(0, 0.5, n_items)
    U, V = rng.normal(0, 0.6, (n_users, 3)), rng.normal(0, 0.6, (n_items, 3))
    r = 3.5 + bu[u] + bi[i] + np.einsum("jf,jf->j", U[u], V[i]) + rng.normal(0, 0.3, n)
    m = sp.csr_matrix((np.clip(np.rint(r), 1, 5), (u, i)), shape=(n_users, n_items))
    m.sum_duplicates()
    m.data = np.clip(m.data, 1, 5)
    return m


@pytest.fixture(scope="module")
def train() -> sp.csr_matrix:
    return _ratings()


def _holdout(m: sp.csr_matrix, seed=1):
    coo = m.tocoo()
    test = np.random.default_rng(seed).random(coo.nnz) < 0.2
    tr = sp.csr_matrix((coo.data[~test], (coo.row[~test], coo.col[~test])), shape=m.shape)
    return tr, coo.row[test], coo.col[test], coo.data[test]


def _rmse(model, users, items, truth) -> float:
    return float(np.sqrt(np.mean((model.predict(users, items) - truth) ** 2)))


class _Recording(server.SVDServer):
    """The real server, keeping what reached it."""

    def aggregate(self, batches, round):
        self.batches = list(batches)
        return super().aggregate(self.batches, round)


def _run(train, mechanism, fake_rate=0.0, seed=0):
    scale = Scale(1.0, 5.0)
    clients = client.RatingClients(train, scale, mechanism, 64, fake_rate)
    srv = _Recording(*train.shape, scale, mechanism, FunkSVDConfig(factors=5,
                                                                              epochs=2))
    log = EventLog(train.shape[0])
    run_protocol(srv, clients, 1, np.random.default_rng(seed), log)
    got = RatingReports(np.concatenate([b.users for b in srv.batches]),
                        np.concatenate([b.items for b in srv.batches]),
                        np.concatenate([b.values for b in srv.batches]))
    return srv, got, log


# ---------------------------------------------------------------- what the server sees


@pytest.mark.parametrize("mech", [LaplaceMechanism(1.0), BinaryMechanism(1.0),
                                  PiecewiseMechanism(1.0)])
def test_server_receives_only_perturbed_values_of_the_rated_items(train, mech):
    srv, got, _ = _run(train, mech)
    coo = train.tocoo()
    order = np.lexsort((coo.col, coo.row))
    assert np.array_equal(got.users, coo.row[order])  # the rated items, not hidden
    assert np.array_equal(got.items, coo.col[order])
    raw = coo.data[order]
    decoded = server.decode(got.values, mech, Scale(1.0, 5.0))
    assert np.all(decoded != raw)  # every value perturbed (continuous law or +-C for Duchi)
    assert srv.reports_received == train.nnz and srv.senders == np.count_nonzero(train.getnnz(1))


def test_laplace_rr_sends_the_raw_rating_with_probability_p(train):
    mech = LaplaceRR(1.0, 1.0)
    _, got, _ = _run(train, mech)
    raw = (train.tocoo().data[np.lexsort((train.tocoo().col, train.tocoo().row))] - 1) / 4
    same = got.values == raw
    assert stats.binomtest(int(same.sum()), same.size, mech.keep_prob).pvalue > P_FLOOR


def test_the_server_object_never_reaches_the_training_matrix(train, monkeypatch, reachable):
    captured = []

    def spy(srv, clients, *args, **kwargs):
        captured.append(srv)
        return run_protocol(srv, clients, *args, **kwargs)

    monkeypatch.setattr(ldp_system, "run_protocol", spy)
    for name, params in (("laplace-svd", {}), ("laplace-rr-svd", {}),
                         ("ldp-svd", {"mechanism": "piecewise", "hide_items": True})):
        model = make_system(name, {**FAST, **params}).fit(train, np.random.default_rng(0))
        srv = captured.pop()
        held = {id(train), id(train.data), id(train.indices), id(train.indptr)}
        for root in (srv, model.model):
            reach = reachable(root)
            assert not held & {id(o) for o in reach}, name
            assert not any(isinstance(o, sp.spmatrix | sp.sparray) for o in reach), name


def test_importing_the_client_never_loads_the_server():
    code = ("import sys, dprec.systems.ldp_svd.client; "
            "assert 'dprec.systems.ldp_svd.server' not in sys.modules; "
            "assert 'dprec.models.funk_svd' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("mech", [LaplaceMechanism(0.7), LaplaceRR(0.7, 0.5),
                                  BinaryMechanism(0.7), PiecewiseMechanism(0.7)])
def test_decoded_reports_are_unbiased_on_the_rating_scale(mech):
    scale, n = Scale(1.0, 5.0), 200_000
    rng = np.random.default_rng(5)
    for r in (1.0, 2.0, 4.5, 5.0):
        est = server.decode(client.perturb(np.full(n, scale.normalise(r)), mech, rng), mech,
                            scale)
        assert abs(est.mean() - r) < 5 * est.std() / math.sqrt(n), (mech, r)


def test_batches_expand_to_wire_messages_and_back(train):
    _, got, _ = _run(train[:40], PiecewiseMechanism(1.0))
    msgs = got.to_messages()
    assert len(msgs) == got.clients.size
    back = RatingReports.from_messages([type(m).from_bytes(m.to_bytes()) for m in msgs])
    assert np.array_equal(back.users, got.users) and np.array_equal(back.items, got.items)
    np.testing.assert_array_equal(back.values, got.values.astype(np.float32))
    with pytest.raises(DprecError, match="sorted by"):
        RatingReports(np.array([0, 0]), np.array([3, 3]), np.zeros(2))


# ---------------------------------------------------------------- privacy reports


def test_laplace_svd_report_eps1_per_rating_value_and_no_bound_on_the_whole_profile(train):
    eps = 1.5
    model = make_system("laplace-svd", {**FAST, "epsilon": eps}).fit(
        train, np.random.default_rng(0))
    rep = model.privacy_report()
    lv = rep.extra["levels"]
    n_max = int(train.getnnz(1).max())
    assert (rep.true.epsilon, rep.true.sides) == (eps, "two")
    assert "value of one rating" in rep.true.notes[0]
    assert lv["event_values"]["epsilon"] == pytest.approx(eps, abs=1e-4)
    assert lv["user_values_basic"]["epsilon"] == pytest.approx(n_max * eps, rel=1e-12)
    assert lv["user_values"]["epsilon"] <= n_max * eps + 1e-9  # PLD, worst-case user
    assert "which items were rated held fixed" in lv["user_values"]["notes"][0]
    assert rep.claimed.epsilon == eps
    # the whole profile: the server sees exactly which items were rated, so no finite eps
    for level in ("event", "user", "user_basic"):
        assert (lv[level]["epsilon"], lv[level]["sides"]) == ("inf", "none"), level
    assert "whole profile" in lv["user"]["notes"][0]
    # the events are per rating: every user n_u copies, unit "interaction"
    counts = model.events.counts(model.mechanism.dp_event(), "interaction")
    assert np.array_equal(counts, train.getnnz(1))


def test_laplace_rr_svd_report_is_none_with_the_claim_beside(train):
    model = make_system("laplace-rr-svd", {**FAST, "eps1": "1", "eps2": "2"}).fit(
        train, np.random.default_rng(0))
    rep = model.privacy_report()
    assert math.isinf(rep.true.epsilon) and rep.true.sides == "none"
    assert rep.claimed.epsilon == 3.0 and rep.claimed.sides == "two"
    for level in ("event", "user", "event_values", "user_values"):
        assert rep.extra["levels"][level]["epsilon"] == "inf"
        assert rep.extra["levels"][level]["sides"] == "none"
    assert rep.mechanisms[0]["true_epsilon"] == "none"
    assert "laplace-rr" in " ".join(rep.lines())


@pytest.mark.parametrize("mechanism", ["duchi", "piecewise"])
def test_ldp_svd_report(train, mechanism):
    model = make_system("ldp-svd", {**FAST, "mechanism": mechanism, "epsilon": 2.0}).fit(
        train, np.random.default_rng(0))
    rep = model.privacy_report()
    lv = rep.extra["levels"]
    assert rep.claimed is None and rep.true.epsilon == 2.0
    assert lv["event_values"]["epsilon"] == pytest.approx(2.0, abs=1e-4)
    assert lv["user_values_basic"]["epsilon"] == pytest.approx(2.0 * train.getnnz(1).max())
    assert lv["user"]["epsilon"] == "inf"


# ---------------------------------------------------------------- hide_items


def test_hide_items_reports_every_rated_item_and_each_unrated_one_with_probability_q(train):
    q, eps = 0.1, 1.0
    mech = LaplaceMechanism(eps)
    _, got, log = _run(train, mech, fake_rate=q, seed=3)
    rated = train.copy()
    rated.data[:] = 1
    reported = sp.csr_matrix((np.ones(len(got)), (got.users, got.items)), shape=train.shape)
    assert (rated.multiply(reported)).nnz == train.nnz  # every rated item is reported
    n_unrated = train.shape[0] * train.shape[1] - train.nnz
    n_fake = len(got) - train.nnz
    assert stats.binomtest(n_fake, n_unrated, q).pvalue > P_FLOOR
    # each user's report count: n_u + Binomial(N - n_u, q); reports sorted by (user, item)
    per_user = np.bincount(got.users, minlength=train.shape[0])
    assert np.all(per_user >= train.getnnz(1))
    assert np.all(np.diff(got.users) >= 0)
    # fake values follow the law of the mechanism applied to the midpoint
    is_fake = np.asarray(~rated.astype(bool)[got.users, got.items]).ravel()
    fake_values = got.values[is_fake]
    assert stats.kstest(fake_values, lambda t: mech.cdf(t, 0.5)).pvalue > P_FLOOR
    # value events: one per rating only (fakes read no rating value)
    assert np.array_equal(log.counts(mech.dp_event(), "interaction"), train.getnnz(1))


def test_hide_items_membership_is_one_sided_ln_1_over_q_plus_eps(train):
    q, eps = 0.1, 1.0
    model = make_system("ldp-svd", {**FAST, "hide_items": True, "fake_rate": q,
                                    "epsilon": eps}).fit(train, np.random.default_rng(0))
    rep = model.privacy_report()
    lv = rep.extra["levels"]
    n_items = train.shape[1]
    # one rating, presence and value: ln(1/q) + eps, one-sided
    assert lv["event"]["epsilon"] == pytest.approx(math.log(1 / q) + eps, abs=1e-3)
    assert lv["event"]["sides"] == "one"
    # the whole profile: N items, each a bit flip with p = 1 whose privacy loss is the
    # constant ln(1/q') (every report is the same "1"): N (ln(1/q) + eps) at any delta
    for level in ("user", "user_basic"):
        assert lv[level]["epsilon"] == pytest.approx(
            reported_epsilon(n_items * (math.log(1 / q) + eps)), rel=1e-9), level
        assert lv[level]["sides"] == "one"
    assert lv["event_values"]["epsilon"] == pytest.approx(eps, abs=1e-4)  # values: unchanged
    assert lv["user_values_basic"]["epsilon"] == pytest.approx(eps * train.getnnz(1).max())
    d = model.diagnostics()
    assert d["fake_reports"] > 0 and d["reports"] == train.nnz + d["fake_reports"]
    # q = 1: every item is reported, so membership is a value change: eps, two-sided
    every = make_system("ldp-svd", {**FAST, "hide_items": True, "fake_rate": 1,
                                    "epsilon": eps}).fit(train[:40], np.random.default_rng(0))
    lv = every.privacy_report().extra["levels"]
    assert lv["event"]["sides"] == "two" and lv["user"]["sides"] == "two"
    assert lv["event"]["epsilon"] == pytest.approx(eps, abs=1e-3)
    assert lv["user_basic"]["epsilon"] == pytest.approx(n_items * eps, rel=1e-9)
    assert lv["user"]["epsilon"] <= n_items * eps
    assert every.diagnostics()["reports"] == 40 * train.shape[1]


# ---------------------------------------------------------------- determinism and accuracy


@pytest.mark.parametrize("name,params", [("laplace-svd", {}), ("laplace-rr-svd", {}),
                                         ("ldp-svd", {"mechanism": "duchi",
                                                      "hide_items": True})])
def test_same_seed_same_predictions(train, name, params):
    users, items = np.arange(50), np.arange(50) % train.shape[1]
    a = make_system(name, {**FAST, **params}).fit(train, np.random.default_rng(4))
    b = make_system(name, {**FAST, **params}).fit(train, np.random.default_rng(4))
    c = make_system(name, {**FAST, **params}).fit(train, np.random.default_rng(5))
    np.testing.assert_array_equal(a.predict(users, items), b.predict(users, items))
    assert not np.array_equal(a.predict(users, items), c.predict(users, items))
    p = a.predict(np.array([0, -1, 10**6]), np.array([10**6, 0, 1]))
    assert np.all((p >= 1) & (p <= 5))


def test_large_eps_approaches_nondp_and_small_eps_is_worse():
    tr, users, items, truth = _holdout(_ratings(400, 150, 16_000, seed=2))
    params = {"factors": 10, "epochs": 20}
    rng = np.random.default_rng
    ref = _rmse(make_system("nondp-svd", params).fit(tr, rng(0)), users, items, truth)
    params = {**params, **SCALE}
    for mech in ("laplace", "duchi", "piecewise"):
        hi = _rmse(make_system("ldp-svd", {**params, "mechanism": mech, "epsilon": 30.0}
                               ).fit(tr, rng(0)), users, items, truth)
        lo = _rmse(make_system("ldp-svd", {**params, "mechanism": mech, "epsilon": 0.5}
                               ).fit(tr, rng(0)), users, items, truth)
        if mech == "duchi":
            # one bit per rating: Var >= 1 - x^2 on [-1, 1] however large eps is, so Duchi's
            # mechanism stays above nondp-svd (a randomised rounding to the scale's ends)
            assert ref + 0.02 < hi < lo, (mech, hi, lo, ref)
        else:
            assert abs(hi - ref) < 0.03, (mech, hi, ref)
        assert lo > ref + 0.05, (mech, lo, ref)
    rr = _rmse(make_system("laplace-rr-svd", {**params, "eps1": 30.0, "eps2": 30.0}
                           ).fit(tr, rng(0)), users, items, truth)
    assert abs(rr - ref) < 0.03


def test_noise_weighting_keeps_sgd_stable_at_small_eps(train):
    w = server.weighted_config(FunkSVDConfig(), LaplaceMechanism(0.1), True)
    assert w[1] == pytest.approx(1 / (1 + 16 * 2 * 10.0**2))
    assert w[0].lr == pytest.approx(0.005 * w[1]) and w[0].reg == pytest.approx(0.02 / w[1])
    assert server.weighted_config(FunkSVDConfig(), None, True)[1] == 1.0
    model = make_system("laplace-svd", {"epsilon": 0.1, **SCALE}).fit(
        train, np.random.default_rng(0))
    assert np.all(np.isfinite(model.model.user_factors))
    with pytest.raises(DprecError, match="diverged"):
        make_system("laplace-svd", {"epsilon": 0.1, "noise_weighting": False, **SCALE}).fit(
            train, np.random.default_rng(0))


# ---------------------------------------------------------------- configuration


def test_registered_systems_and_fixed_fields():
    for name in ("laplace-svd", "laplace-rr-svd", "ldp-svd"):
        s = SYSTEMS[name]
        assert s.task == "rating" and s.private
    assert make_system("laplace-svd").config.mechanism == "laplace"
    with pytest.raises(DprecError, match="fixed by the system name"):
        make_system("laplace-svd", {"mechanism": "duchi"})
    cfg = make_system("ldp-svd", {"mechanism": "piecewise", "epsilon": "2",
                                  "factors": "7"}).config
    assert (cfg.mechanism, cfg.epsilon, cfg.svd_config().factors) == ("piecewise", 2.0, 7)
    assert isinstance(make_system("ldp-svd", {"mechanism": "duchi"}).mechanism, BinaryMechanism)


@pytest.mark.parametrize("name,params,msg", [
    ("ldp-svd", {"epsilon": "0"}, "epsilon must be a finite number > 0"),
    ("ldp-svd", {"mechanism": "gauss"}, "mechanism must be"),
    ("ldp-svd", {"fake_rate": "0"}, r"fake_rate must be in \(0, 1\]"),
    ("ldp-svd", {"rating_min": "1"}, "rating_min and rating_max must be given together"),
    ("ldp-svd", {"rating_min": "5", "rating_max": "1"}, "low < high"),
    ("ldp-svd", {"lr": "-1"}, "lr must be finite and > 0"),
    ("laplace-rr-svd", {"eps2": "-1"}, "eps2 must be a finite number > 0"),
    ("laplace-rr-svd", {"epsilon": "1"}, "has no option epsilon"),
])
def test_bad_configs_name_the_field(name, params, msg):
    with pytest.raises(DprecError, match=msg):
        make_system(name, params)


def test_public_scale_from_config_or_the_declared_scale_never_the_training_ratings(train):
    m = make_system("laplace-svd", {**FAST, "rating_min": 0, "rating_max": 10})
    m.set_rating_scale((1.0, 5.0))  # the config wins over the declared scale
    m.fit(train, np.random.default_rng(0))
    assert (m.scale.low, m.scale.high) == (0.0, 10.0)
    inner = train.copy()
    inner.data = np.clip(inner.data, 2, 4)  # the training ratings span only 2..4
    m = make_system("laplace-svd", {"epochs": 5, "factors": 10})
    m.set_rating_scale((1.0, 5.0))
    m.fit(inner, np.random.default_rng(0))
    assert (m.scale.low, m.scale.high) == (1.0, 5.0)
    assert m.diagnostics()["rating_scale"] == [1.0, 5.0]
    # nothing declared, nothing set: an error saying what to pass, not the data's min/max
    for declared in (False, True):
        m = make_system("ldp-svd", {"epochs": 5, "factors": 10})
        if declared:
            m.set_rating_scale(None)
        with pytest.raises(DprecError, match="rating scale is unknown.*rating_min=1"):
            m.fit(inner, np.random.default_rng(0))
