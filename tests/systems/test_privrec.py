# ruff: noqa: E402  (torch is imported, or the module skipped, before the modules that need it)
"""PrivRec, DP-PrivRec and their baselines: the contract of side-feature systems, the server
step, adaptive clipping, the messages and the privacy report (seed 002)."""

from __future__ import annotations

import functools
import math

import dp_accounting
import numpy as np
import pytest

torch = pytest.importorskip("torch")  # an optional extra ('.[torch]'): skipped without it
import scipy.sparse as sp

from dprec.data.features import side_features
from dprec.data.synthetic import synthetic
from dprec.errors import DprecError
from dprec.evaluation.runner import Experiment
from dprec.evaluation.split import UserSplit
from dprec.evaluation.user_ranking import UserRankingEvaluator
from dprec.privacy.adjacency import Adjacency
from dprec.privacy.gaussian import Sampling, gaussian_rdp_epsilon
from dprec.privacy.guarantee import reported_epsilon
from dprec.privacy.rdp_accountant import RdpAccountant
from dprec.protocol.messages import Message, MessageError
from dprec.systems.base import NotFittedError, UnknownUserError
from dprec.systems.privrec.accounting import privrec_effective_noise
from dprec.systems.privrec.clipping import AdaptiveClip, clip_rows
from dprec.systems.privrec.config import PrivRecConfig
from dprec.systems.privrec.messages import ModelBroadcast, ModelUpdates
from dprec.systems.privrec.server import ReptileServer
from dprec.systems.privrec.system import privrec_noise
from dprec.systems.registry import SYSTEMS, make_system

SIDE = [n for n, s in SYSTEMS.items() if s.protocol == "user-split"]
FAST = {"rounds": 4, "clients_per_round": 10, "local_epochs": 1, "finetune_epochs": 1,
        "embedding_dim": 8, "hidden_width": 16, "hidden_layers": 2}


@functools.cache
def _data():
    ds = synthetic(150, 60, 3_600, rng=7)
    return ds, side_features(ds)


def _fitted(name: str, seed: int = 0, **over: object):
    ds, f = _data()
    model = make_system(name, {**FAST, **over})
    model.set_side_features(f)
    return model.fit(ds.matrix, np.random.default_rng(seed))


def test_the_family_is_registered():
    assert set(SIDE) == {"privrec", "dp-privrec", "privrec-cen", "fofl-self", "nn-self"}


@pytest.mark.parametrize("name", SIDE)
def test_shapes_candidates_and_determinism(name):
    ds, _ = _data()
    users = np.arange(6)
    a = _fitted(name)
    full = a.score(ds.matrix[users], users=users)
    assert full.shape == (6, ds.n_items) and np.all(np.isfinite(full))
    cands = np.random.default_rng(1).integers(0, ds.n_items, size=(6, 5))
    b = _fitted(name)
    part = b.score(ds.matrix[users], items=cands, users=users)
    np.testing.assert_allclose(part, np.take_along_axis(full, cands, 1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", SIDE)
def test_empty_history_scores_with_the_global_model(name):
    ds, _ = _data()
    s = _fitted(name).score(sp.csr_matrix((2, ds.n_items)), users=np.array([0, 1]))
    assert s.shape == (2, ds.n_items) and np.all(np.isfinite(s))


def test_side_feature_systems_need_the_users_index_and_the_features():
    ds, _ = _data()
    m = _fitted("privrec")
    with pytest.raises(UnknownUserError, match="side features"):
        m.score(ds.matrix[[0]], users=np.array([-1]))
    with pytest.raises(UnknownUserError, match="side features"):
        m.score(ds.matrix[[0]])
    bare = make_system("privrec", FAST)
    with pytest.raises(NotFittedError):
        bare.score(ds.matrix[[0]], users=np.array([0]))
    with pytest.raises(DprecError, match="side features"):
        bare.fit(ds.matrix, np.random.default_rng(0))
    other = synthetic(40, 60, 1_000, rng=1)
    bare.set_side_features(side_features(other))
    with pytest.raises(DprecError, match="side features are for 40 users"):
        bare.fit(ds.matrix, np.random.default_rng(0))


def test_fofl_self_needs_no_side_features():
    ds, _ = _data()
    m = make_system("fofl-self", FAST).fit(ds.matrix, np.random.default_rng(0))
    assert m.score(ds.matrix[[0, 1]], users=np.array([-1, -1])).shape == (2, ds.n_items)


def test_batched_and_looped_clients_train_the_same_model():
    ds, _ = _data()
    users = np.arange(4)
    a = _fitted("privrec", batched=True).score(ds.matrix[users], users=users)
    b = _fitted("privrec", batched=False).score(ds.matrix[users], users=users)
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def test_privrec_learns_the_taste_signal_of_the_side_features():
    """Synthetic side features carry the dominant taste dimensions: PrivRec beats random on
    the PrivRec protocol clearly."""
    ds, _ = _data()
    exp = Experiment(ds, [0], UserSplit(0.2), UserRankingEvaluator(ks=(5, 10)))
    pr = exp.run(lambda: make_system("privrec", {"rounds": 30, "local_lr": 0.3}))
    rnd = exp.run(lambda: make_system("random"))
    hr, base = pr.metrics["full"]["HR@10"]["mean"], rnd.metrics["full"]["HR@10"]["mean"]
    assert hr > 1.5 * base and hr > base + 0.05


# -- server, clipping, messages -----------------------------------------------------------


def _server(dp: bool, **over: object) -> ReptileServer:
    cfg = PrivRecConfig(dp=dp, clients_per_round=4, **over)
    s = ReptileServer(np.zeros(1000, np.float32), np.arange(10), 12, cfg)
    s.start(np.random.default_rng(0))
    return s


def test_reptile_step_is_theta_plus_alpha3_mean_delta():
    s = _server(False, server_lr=0.5)
    d = np.random.default_rng(1).normal(size=(4, 1000)).astype(np.float32)
    b = s.aggregate([ModelUpdates(d, np.ones(4, np.uint8))], 0)
    np.testing.assert_allclose(s.theta, 0.5 * d.mean(0), rtol=1e-6)
    assert b.round == 1 and len(b.clients) == 4 and set(b.clients) <= set(range(10))
    assert b.clip == 0.0


def test_dp_server_reclips_adds_the_stated_noise_and_moves_the_bound():
    s = _server(True, initial_clip=2.0, noise_multiplier=1.0, budget_balance=0.7,
                clip_lr=0.2, target_quantile=0.9)
    big = np.zeros((4, 1000), np.float32)
    big[:, 0] = 100.0  # a client that ignored the bound: re-clipped to S = 2
    s.aggregate([ModelUpdates(big, np.ones(4, np.uint8))], 0)
    sigma_d = 2 * 2.0 * 1.0 / 4 * math.sqrt(1 / 0.3)
    noise = s.theta[1:]
    assert abs(noise.std() / sigma_d - 1) < 0.1  # 999 draws: sd of the ratio ~ 0.022
    assert abs(s.theta[0] - 2.0) < 5 * sigma_d
    # beta~ = 1 + N(0, sigma_b^2); linear rule S - 0.2 (beta~ - 0.9)
    beta = s.unclipped_history[0]
    assert s.clip_history[0] == pytest.approx(2.0 - 0.2 * (beta - 0.9))


def test_server_refuses_wrong_sized_or_too_many_updates():
    s = _server(False)
    with pytest.raises(MessageError, match="1000 parameters"):
        s.aggregate([ModelUpdates(np.zeros((1, 5)), np.ones(1, np.uint8))], 0)
    with pytest.raises(MessageError, match="at most 4"):
        s.aggregate([ModelUpdates(np.zeros((5, 1000)), np.ones(5, np.uint8))], 0)
    with pytest.raises(DprecError, match="ModelUpdates"):
        s.aggregate(["junk"], 0)
    assert s.aggregate([], 0) is None


def test_clip_rows_scales_to_the_bound_and_flags_before_clipping():
    d = np.array([[3.0, 4.0], [0.3, 0.4]], np.float32)
    out, unclipped = clip_rows(d, 1.0)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), [1.0, 0.5], rtol=1e-6)
    assert unclipped.tolist() == [False, True]


@pytest.mark.parametrize("rule", ["linear", "geometric"])
def test_adaptive_clip_moves_towards_the_target_quantile(rule):
    c = AdaptiveClip(10.0, 0.5, 0.2, rule)
    assert c.update(1.0) < 10.0  # everything unclipped: shrink
    c2 = AdaptiveClip(10.0, 0.5, 0.2, rule)
    assert c2.update(0.0) > 10.0  # everything clipped: grow
    expected = 10.0 - 0.2 * 0.5 if rule == "linear" else 10.0 * math.exp(-0.2 * 0.5)
    assert AdaptiveClip(10.0, 0.5, 0.2, rule).update(1.0) == pytest.approx(expected)
    assert AdaptiveClip(1e-3, 0.5, 5.0, rule).update(1.0) > 0  # never <= 0
    with pytest.raises(DprecError):
        AdaptiveClip(0.0, 0.5, 0.2, rule)


def test_model_messages_round_trip_and_refuse_bad_content():
    b = ModelBroadcast(np.arange(5, dtype=np.float32), np.array([4, 2]), 3, 1.5)
    assert Message.from_bytes(b.to_bytes()) == b and b.nbytes == len(b.to_bytes())
    u = ModelUpdates(np.ones((2, 5)), np.array([1, 0]))
    assert Message.from_bytes(u.to_bytes()) == u and u.nbytes == len(u.to_bytes())
    with pytest.raises(MessageError):
        ModelBroadcast.from_bytes(b.to_bytes()[:-1])
    with pytest.raises(MessageError):
        ModelUpdates.from_bytes(u.to_bytes() + b"\x00")
    with pytest.raises(MessageError, match="distinct"):
        ModelBroadcast(np.zeros(2), np.array([1, 1]))
    with pytest.raises(MessageError, match="clip"):
        ModelBroadcast(np.zeros(2), np.array([1]), clip=-1.0)
    with pytest.raises(MessageError, match="finite"):
        ModelUpdates(np.array([[np.nan]]), np.array([1]))
    with pytest.raises(MessageError):
        ModelUpdates(np.zeros((1, 2)), np.array([2]))
    with pytest.raises(MessageError, match="3 parameters"):
        b.check_for(3, 10)
    with pytest.raises(MessageError, match="not one of"):
        b.check_for(5, 3)


# -- privacy --------------------------------------------------------------------------------


def test_noise_multipliers_as_implemented():
    cfg = PrivRecConfig(noise_multiplier=1.0, budget_balance=0.7)
    z_d, z_b, z_eff = privrec_noise(cfg)
    assert z_d == pytest.approx(1 / math.sqrt(0.3))
    assert z_b == pytest.approx(2 / math.sqrt(0.7))
    assert z_eff == pytest.approx(privrec_effective_noise(1.0, 0.7, 1.0))
    assert z_eff > 1.0  # b's true sensitivity (1/M) is half the paper's: more noise per unit
    # the paper's sigma_b assumes sensitivity 2/M: then the round is exactly z
    assert privrec_effective_noise(1.0, 0.7, 2.0) == pytest.approx(1.0)
    # noise added after the alpha3 scaling: a larger server step means less noise per unit
    assert privrec_noise(PrivRecConfig(server_lr=2.0))[0] == pytest.approx(z_d / 2)


def test_dp_privrec_report_comes_from_the_rdp_accountant_over_its_rounds():
    ds, _ = _data()
    m = _fitted("dp-privrec", rounds=3, clients_per_round=10)
    rep = m.privacy_report().to_json()
    n = ds.n_users
    _, _, z_eff = privrec_noise(m.config)
    event = dp_accounting.SampledWithoutReplacementDpEvent(
        n, 10, dp_accounting.GaussianDpEvent(z_eff))
    want = RdpAccountant().compose([(event, 3)], 1e-6).epsilon
    assert rep["true"]["epsilon"] == reported_epsilon(want)
    assert rep["true"]["level"] == "user" and rep["true"]["model"] == "central"
    assert rep["claimed"]["epsilon"] == reported_epsilon(gaussian_rdp_epsilon(
        1.0, 10 / n, 30, 1e-6, Sampling.FIXED_SIZE, dataset_size=n,
        conversion="classic"))
    assert rep["claimed"]["epsilon"] > rep["true"]["epsilon"]
    assert "trusted aggregator" in rep["threat_model"]
    assert rep["rounds"] == 3 and rep["pld_poisson_epsilon"] > 0
    assert make_system("privrec", FAST).privacy_report() is None


def test_rdp_accountant_reproduces_the_corrected_table_cells():
    """The issue's outside check: 1000 rounds of M of 4800 without replacement, z = 1,
    delta = 1e-6: 0.899 (M = 5) and 2.446 (M = 30)."""
    for m, want in ((5, 0.899), (30, 2.446)):
        e = dp_accounting.SampledWithoutReplacementDpEvent(
            4800, m, dp_accounting.GaussianDpEvent(1.0))
        assert RdpAccountant().compose([(e, 1000)], 1e-6).epsilon == pytest.approx(want,
                                                                                   abs=1e-3)
    with pytest.raises(DprecError):
        RdpAccountant().check(dp_accounting.PoissonSampledDpEvent(
            0.1, dp_accounting.GaussianDpEvent(1.0)))
    poisson = RdpAccountant(Adjacency.ADD_REMOVE_ONE)
    assert poisson.compose([(dp_accounting.PoissonSampledDpEvent(
        0.01, dp_accounting.GaussianDpEvent(1.0)), 100)], 1e-5).epsilon == pytest.approx(
        gaussian_rdp_epsilon(1.0, 0.01, 100, 1e-5))


@pytest.mark.parametrize("bad", [{"rounds": 0}, {"local_lr": 0}, {"mu": -1},
                                 {"target_quantile": 1.0}, {"budget_balance": 0.0},
                                 {"clients_per_round": 1.5}, {"delta": 1.0}])
def test_config_refuses_bad_values(bad):
    with pytest.raises(DprecError):
        PrivRecConfig(**bad)


def test_more_clients_per_round_than_training_users_is_refused():
    with pytest.raises(DprecError, match="training users"):
        _fitted("privrec", clients_per_round=1000)


@pytest.mark.parametrize("fmt", ["ml-1m", "frappe"])
def test_privrec_trains_on_the_loaders_side_features(tmp_path, fmt, monkeypatch):
    """ML-1M (users.dat/movies.dat) and Frappe (context, cost, category) fixtures written by
    the data tests: the features reach the network and a fitted model scores every item."""
    import importlib.util
    from pathlib import Path

    from dprec.data.loaders import load_frappe, load_ml1m, movielens

    monkeypatch.setattr(movielens, "RELEASES", {})  # a tiny fixture, not the release

    def writers(name: str):  # the data tests' fixture writers (tests/data is not a package)
        path = Path(__file__).parents[1] / "data" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(f"_fixtures_{name}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    ds = (load_ml1m(writers("test_data_loaders").write_ml1m(tmp_path / "m")) if fmt == "ml-1m"
          else load_frappe(writers("test_frappe").write_frappe(tmp_path / "f")))
    f = side_features(ds)
    assert f.users.n == ds.n_users and f.items.n == ds.n_items
    m = make_system("privrec", {**FAST, "clients_per_round": 1, "threshold": 0.5})
    m.set_side_features(f)
    m.fit(ds.matrix, np.random.default_rng(0))
    users = np.arange(ds.n_users)
    s = m.score(ds.matrix[users], users=users)
    assert s.shape == (ds.n_users, ds.n_items) and np.all(np.isfinite(s))


def test_a_device_whose_fine_tuning_diverges_keeps_the_global_model():
    ds, _ = _data()
    m = _fitted("privrec", finetune_epochs=1)
    users = np.arange(3)
    with torch.no_grad():
        bad = {k: v.unsqueeze(0).repeat(3, *([1] * v.dim())).clone() for k, v in
               m._theta.items()}
        bad["mlp.0.weight"][1] = float("nan")
    kept = m._keep_finite(bad)
    for k in kept:
        torch.testing.assert_close(kept[k][1], m._theta[k])
        torch.testing.assert_close(kept[k][0], bad[k][0])
    assert m.diagnostics()["finetune_diverged"] == 1
    assert np.all(np.isfinite(m.score(ds.matrix[users], users=users)))
