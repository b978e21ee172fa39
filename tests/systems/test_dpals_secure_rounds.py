"""dpals' rounds as the engine's roles (issue 24, "Done when"): the clients' noise shares
split exactly from their sum, the descriptor that deploys dpals, the cryptographic secure sum
of a round equal to the in-process exact sum bit for bit, and what each role refuses."""

from __future__ import annotations

import numpy as np
import pytest

from dprec.data.synthetic import synthetic
from dprec.errors import DprecError
from dprec.protocol.messages import MessageError
from dprec.protocol.secure_sum.deploy import sealed_uploads
from dprec.protocol.secure_sum.noise_shares import ShareNoise
from dprec.protocol.secure_sum.relay import SecureSumRelay
from dprec.protocol.secure_sum.wire import ClientBlock, ExactSum, SumRelease, SumUpload
from dprec.systems.deployable import ProtocolInfo, check_upload
from dprec.systems.dp_pop.system import DpPopConfig
from dprec.systems.dpals.clients import DpalsClients
from dprec.systems.dpals.deploy import DEPLOYMENT
from dprec.systems.dpals.messages import DpalsModel
from dprec.systems.dpals.plan import plan_of, run_plan
from dprec.systems.dpals.serve import server_of
from dprec.systems.dpals.system import DpalsConfig


def plan_relay(plan, state_dir):
    """The service proxy's part of a dpals run of ``plan``: the layer's relay with each
    round's own parameters."""
    return SecureSumRelay(lambda r: plan.round(r).params, state_dir, plan.min_honest,
                          plan.n_clients)


N_USERS, N_ITEMS = 30, 40


@pytest.fixture(scope="module")
def train():
    return synthetic(N_USERS, N_ITEMS, 600, rng=5).binary()


def _cfg(**kw):
    """A dpals config of the plain ring path (``validity=none``: these tests are about the
    rounds, the ring and the relay; the proved path is tests/services/test_bounded_proofs.py)."""
    return DpalsConfig(**{"epsilon": 2.0, "k": 5, "n_clients": N_USERS,
                          "validity": "none", **kw})


def test_the_shares_of_any_grouping_of_clients_add_up_to_the_same_total():
    noise = ShareNoise(2.5, 17, 37, seed=9, release="item_statistics", round_id=1)
    root = noise.root()
    total = root[0] - root[1]
    leaves = noise.leaves(0, 37)
    np.testing.assert_array_equal(leaves.sum(axis=0), total)
    for cuts in ([0, 37], [0, 5, 6, 30, 37], [0, 1, 2, 19, 36, 37]):
        parts = [noise.range_sum(a, b) for a, b in zip(cuts, cuts[1:], strict=False)]
        np.testing.assert_array_equal(np.sum(parts, axis=0), total)
    np.testing.assert_array_equal(noise.leaves(6, 30), leaves[6:30])
    np.testing.assert_array_equal(noise.leaf(11), leaves[11])


def test_the_split_shares_are_independent_skellam_shares():
    """Leaves of Sk(3): mean 0, variance 2 * 3 per coordinate, uncorrelated neighbours."""
    leaves = ShareNoise(3.0, 40, 3000, seed=1, release="r", round_id=0).leaves(0, 3000)
    x = leaves.astype(np.float64)
    assert abs(x.mean()) < 0.05
    assert x.var() == pytest.approx(6.0, rel=0.03)
    assert abs(np.corrcoef(x[:-1].ravel(), x[1:].ravel())[0, 1]) < 0.02


def test_a_dpals_config_is_deployed_by_dpals_and_a_dp_pop_config_still_by_dp_pop():
    info = ProtocolInfo("dpals", N_ITEMS, _cfg())
    assert info.family == "dpals" and info.deployment is DEPLOYMENT
    assert info.rounds == 2 and ProtocolInfo("dpals", N_ITEMS, _cfg(weighting="tail")).rounds == 3
    pop = ProtocolInfo("dp-pop", N_ITEMS, DpPopConfig(n_clients=N_USERS))
    assert pop.family == "dp_pop"
    with pytest.raises(DprecError, match="n_clients"):
        ProtocolInfo("dpals", N_ITEMS, DpalsConfig())
    with pytest.raises(DprecError, match="aggregation=secure"):
        ProtocolInfo("dpals", N_ITEMS, DpalsConfig(aggregation="trusted", n_clients=3))


def test_the_upload_at_ml100k_with_four_factors_is_one_vector_of_items_times_14_plus_10():
    cfg = DpalsConfig(epsilon=1.0, factors=4, n_clients=943, validity="none")
    plan = run_plan(cfg, 1682, 943)
    assert [r.dimension for r in plan.rounds] == [1682 * 14 + 10] * 2
    p = plan.rounds[0].params
    info = ProtocolInfo("dpals", 1682, cfg)
    # header, round, message id, sealed seed, sealed share of d * ceil(b / 8) bytes
    assert info.upload_size() == 6 + 28 + 88 + p.dimension * p.element_bytes + 56
    assert info.batch_bytes(943) <= 256 << 20  # the server's default batch limit


def _round_trip(train, cfg, tmp_path):
    """Every round of a run twice: the server fed the in-process exact sum, and a second
    server fed the proxy's release of every client's sealed upload."""
    plan = plan_of(cfg, N_ITEMS)
    exact, secure = server_of(cfg, N_ITEMS, N_USERS), server_of(cfg, N_ITEMS, N_USERS)
    relay = plan_relay(plan, tmp_path)
    events = {r.name: r.event(plan.multiplier) for r in plan.releases}
    clients = DpalsClients(train, np.arange(N_USERS), cfg, plan, 123, events,
                           lambda: relay.keys.public)
    a = exact.start(np.random.default_rng(2))
    b = secure.start(np.random.default_rng(2))
    relay.see_broadcast(0, b.to_bytes())  # the server's key: the run id
    info = ProtocolInfo("dpals", N_ITEMS, cfg)
    for r in range(len(plan.rounds)):
        blocks = list(clients.step(a, r, np.random.default_rng(0)))
        total = np.sum([blk.total for blk in blocks], axis=0)
        sealed = [ClientBlock(blk.ids, blk.total, blk.vectors, r, b.server_key,
                              relay.keys.public, blk.params) for blk in blocks]
        uploads = [body for blk in sealed for _, body in sealed_uploads(blk)]
        for body in uploads:
            check_upload(SumUpload.from_bytes(body), info)
            relay.admit(SumUpload.from_bytes(body), r)
        verdicts = secure.check_shares(relay.share_batch(uploads, r), r)  # kept shares
        assert not any(verdicts.values())
        secure.kept_outputs = lambda ids, kept=verdicts.outputs: [kept.get(m) for m in ids]
        release = SumRelease.from_bytes(relay.release(uploads, r, N_USERS))
        a = exact.aggregate([ExactSum(total, N_USERS)], r)
        b = secure.aggregate([release], r)
        np.testing.assert_array_equal(a.counts, b.counts)
        np.testing.assert_array_equal(a.factors_matrix, b.factors_matrix)
    return a, relay, plan


@pytest.mark.slow  # every round through the cryptographic relay
@pytest.mark.parametrize("weighting", ["uniform", "tail"])
def test_the_cryptographic_rounds_give_the_in_process_model_bit_for_bit(train, tmp_path,
                                                                        weighting):
    model, _, plan = _round_trip(train, _cfg(weighting=weighting), tmp_path)
    assert model.contributors == N_USERS and len(plan.rounds) == 2 + (weighting == "tail")
    assert np.isfinite(model.factors_matrix).all() and model.factors_matrix.any()


def test_an_upload_of_another_round_or_length_is_refused(train, tmp_path):
    cfg = _cfg(weighting="tail")
    plan = plan_of(cfg, N_ITEMS)
    relay = plan_relay(plan, tmp_path)
    server = server_of(cfg, N_ITEMS, N_USERS)
    model = server.start(np.random.default_rng(0))
    relay.see_broadcast(0, model.to_bytes())
    events = {r.name: r.event(plan.multiplier) for r in plan.releases}
    clients = DpalsClients(train, np.arange(N_USERS), cfg, plan, 1, events,
                           lambda: relay.keys.public)
    block = next(clients.step(model, 0, np.random.default_rng(0)))
    body = next(sealed_uploads(block))[1]
    info = ProtocolInfo("dpals", N_ITEMS, cfg)
    with pytest.raises(MessageError, match="not an upload of this round"):
        relay.admit(SumUpload.from_bytes(body), 1)  # a count-round upload in an ALS round
    uniform = plan_of(_cfg(), N_ITEMS)  # two ALS rounds of one length
    relay = plan_relay(uniform, tmp_path)
    relay.see_broadcast(0, model.to_bytes())
    clients = DpalsClients(train, np.arange(N_USERS), _cfg(), uniform, 1, events,
                           lambda: relay.keys.public)
    als = next(sealed_uploads(next(clients.step(model, 0, np.random.default_rng(0)))))[1]
    relay.admit(SumUpload.from_bytes(als), 0)
    with pytest.raises(MessageError, match="sealed for round 0, this is round 1"):
        relay.admit(SumUpload.from_bytes(als), 1)
    with pytest.raises(MessageError, match="rounds 0..2"):
        check_upload(SumUpload(body[:4] + (7).to_bytes(8, "big") + body[12:]), info)
    with pytest.raises(MessageError):
        check_upload(SumUpload(body + b"\0"), info)


def test_a_client_refuses_a_broadcast_it_cannot_use(train):
    cfg = _cfg()
    plan = plan_of(cfg, N_ITEMS)
    clients = DpalsClients(train, np.arange(N_USERS), cfg, plan, 1, {})
    key = bytes(range(32))
    with pytest.raises(DprecError, match="shape"):
        list(clients.step(DpalsModel(key, np.zeros((N_ITEMS, 3)), np.zeros(0)), 0,
                          np.random.default_rng(0)))
    bad = np.zeros((N_ITEMS, 4))
    with pytest.raises(MessageError, match="finite"):
        DpalsModel(key, np.where(np.eye(N_ITEMS, 4) > 0, np.nan, bad), np.zeros(0))
    tail = plan_of(_cfg(weighting="tail"), N_ITEMS)
    clients = DpalsClients(train, np.arange(N_USERS), _cfg(weighting="tail"), tail, 1, {})
    with pytest.raises(DprecError, match="DP counts"):
        list(clients.step(DpalsModel(key, bad, np.zeros(0)), 1, np.random.default_rng(0)))


def test_the_server_takes_one_batch_of_at_least_min_honest_clients():
    cfg = _cfg(min_honest=20)
    server = server_of(cfg, N_ITEMS, N_USERS)
    server.start(np.random.default_rng(0))
    d = plan_of(cfg, N_ITEMS).rounds[0].dimension
    zero = np.zeros(d, np.int64)
    with pytest.raises(DprecError, match="one"):
        server.aggregate([ExactSum(zero, 25), ExactSum(zero, 5)], 0)
    with pytest.raises(DprecError, match="min_honest = 20"):
        server.aggregate([ExactSum(zero, 19)], 0)
    assert server.aggregate([ExactSum(zero, 20)], 0).contributors == 20


def test_a_round_is_one_block_whose_clients_vectors_are_built_a_few_at_a_time(train,
                                                                               monkeypatch):
    """The total sums every client at once (the noise shares at the tree's root, not one
    split per small block); the clients' own vectors still come a few rows at a time."""
    from dprec.systems.dpals import clients as clients_module

    cfg = _cfg()
    plan = plan_of(cfg, N_ITEMS)
    server = server_of(cfg, N_ITEMS, N_USERS)
    model = server.start(np.random.default_rng(0))
    events = {r.name: r.event(plan.multiplier) for r in plan.releases}
    clients = DpalsClients(train, np.arange(N_USERS), cfg, plan, 7, events)
    monkeypatch.setattr(clients_module, "BLOCK_CELLS", 3 * plan.rounds[0].dimension)
    blocks = list(clients.step(model, 0, np.random.default_rng(0)))
    assert len(blocks) == 1 and blocks[0].n_clients == N_USERS
    rows = blocks[0].vectors()
    assert not isinstance(rows, np.ndarray)  # built on demand
    rows = np.stack(list(rows))
    assert rows.shape == (N_USERS, plan.rounds[0].dimension)
    np.testing.assert_array_equal(rows.sum(axis=0), blocks[0].total)
