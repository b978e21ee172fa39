"""Malicious clients of a secure sum (issue 23 §2): a client writes any element of Z_q^d,
the in-process simulation of the attack gives the cryptographic round's sum bit for bit,
one client puts any item at the top of the published ranking, a huge value wraps mod q,
and the bounded (k-hot) attack adds exactly one per attacker."""

from __future__ import annotations

import secrets

import numpy as np
import pytest

from dprec.data.synthetic import synthetic
from dprec.errors import DprecError
from dprec.protocol.secure_sum.messages import (
    MESSAGE_ID_BYTES,
    Upload,
    associated_data,
    run_id,
)
from dprec.protocol.secure_sum.proxy import SecureSumProxy
from dprec.protocol.secure_sum.ring import SEED_BYTES, encode_elements, expand_mask
from dprec.protocol.secure_sum.sealed import KeyPair, seal
from dprec.protocol.secure_sum.server import SecureSumServer
from dprec.protocol.sum_poisoning import (
    PoisonedSumClients,
    SumPoisoning,
    coalition_vectors,
    poison_sum,
)
from dprec.random import derive_generator
from dprec.systems.dp_pop import system as pop_system
from dprec.systems.dp_pop.calibration import calibrate
from dprec.systems.dp_pop.client import PopClients
from dprec.systems.dp_pop.proxy import ExactSumProxy
from dprec.systems.dp_pop.server import PopularityServer
from dprec.systems.dp_pop.system import DpPopConfig
from dprec.systems.registry import make_system

N, D, K = 60, 40, 4


@pytest.fixture(scope="module")
def train():
    return synthetic(N, D, 1200, rng=5).binary()


@pytest.fixture(scope="module")
def cal():
    """The round's public numbers, calibrated once (the Skellam calibration takes seconds)."""
    return calibrate(DpPopConfig(epsilon=2.0, k=K, n_clients=N), D, N)


@pytest.fixture
def fits(train, cal, monkeypatch):
    """dp-pop fits at (epsilon 2, k K) reusing ``cal``; the unpoisoned one first."""
    monkeypatch.setattr(pop_system, "calibrate", lambda *args: cal)
    clean = make_system("dp-pop", {"epsilon": 2.0, "k": K})
    clean.fit(train, derive_generator(7, "system", "dp-pop"))
    return clean


def _round(train, cal):
    server = PopularityServer(D, N, cal.min_honest, cal.params, cal.share)
    model = server.start(np.random.default_rng(0))
    proxy_keys = KeyPair()
    clients = PopClients(train, np.arange(N), K, "uniform", cal.share, "event",
                         lambda: proxy_keys.public, cal.params)
    return cal, server, model, proxy_keys, clients


def _any_seal(params, proxy_key, server_key, v, round_id):
    """A malicious client's upload: the honest client's sealing without its range check,
    so ``v`` is any integer vector, sent as its element of Z_q^d."""
    seed, mid = secrets.token_bytes(SEED_BYTES), secrets.token_bytes(MESSAGE_ID_BYTES)
    run = run_id(proxy_key, server_key)
    share = (np.asarray(v, np.int64).view(np.uint64)
             - expand_mask(seed, params.dimension, params.bits)) & np.uint64(params.modulus - 1)
    return Upload(round_id, mid,
                  seal(proxy_key, seed, associated_data(run, round_id, mid, "proxy")),
                  seal(server_key, encode_elements(share, params.element_bytes),
                       associated_data(run, round_id, mid, "server"))).to_bytes()


@pytest.mark.parametrize("strategy", ["promote", "huge", "reverse", "random", "k-hot"])
def test_the_simulated_attack_is_the_cryptographic_rounds_sum_bit_for_bit(train, cal,
                                                                          strategy):
    cal, server, model, proxy_keys, honest = _round(train, cal)
    poisoning = SumPoisoning(0.1, strategy, targets=3, huge=2**40 + 3 * 2**10 + 7)
    clients = PoisonedSumClients(honest, np.arange(0, N, 10), poisoning,
                                 np.random.default_rng(1))
    blocks = list(clients.step(model, 0, np.random.default_rng(9)))
    assert clients.replaced == 6
    simulated = server.aggregate(list(ExactSumProxy(N).forward(iter(blocks))), 0).counts
    p = cal.params
    agg = SecureSumProxy(p, proxy_keys, 0, N, server_key=model.server_key)
    for b in blocks:
        for uid, v in zip(b.ids, b.vectors(), strict=True):
            agg.submit(str(uid), _any_seal(p, proxy_keys.public, model.server_key, v, 0))
    sealed = SecureSumServer(p, server.keys).aggregate(agg.release(), 0).integer_sum
    np.testing.assert_array_equal(simulated, sealed)
    half = p.modulus // 2
    assert (simulated > -half).all() and (simulated <= half).all()


def _fit(train, poisoning, validity="none"):
    """dp-pop under ``poisoning``; unchecked (``validity=none``) unless told: the damage."""
    model = make_system("dp-pop", {"epsilon": 2.0, "k": K, "validity": validity})
    hook = poison_sum(model, poisoning, derive_generator(3, "poison"))
    model.fit(train, derive_generator(7, "system", "dp-pop"))
    return model, hook


def test_no_attacker_is_the_unpoisoned_run_bit_for_bit(train, fits):
    clean = fits
    model, hook = _fit(train, SumPoisoning(0.0, "promote"))
    np.testing.assert_array_equal(model.noisy_counts, clean.noisy_counts)
    assert hook.clients.replaced == 0


def test_one_client_puts_every_target_at_the_top(train, fits):
    model, hook = _fit(train, SumPoisoning(1 / N, "promote", targets=5))
    assert len(hook.clients.attackers) == 1
    assert set(model.ranking[:5]) == set(hook.clients.targets)


def test_a_huge_value_wraps_mod_q(train, cal, fits):
    clean = fits
    q = cal.params.modulus
    # q/2 + q * 2^20: huge, and congruent to q/2: every target falls by q/2 to the bottom
    model, hook = _fit(train, SumPoisoning(1 / N, "huge", targets=3, huge=q // 2 + q * 2**20))
    t = hook.clients.targets
    # the same honest clients, less the attacker's own row (a 0/1 entry plus a small share)
    shift = model.noisy_counts[t] - clean.noisy_counts[t]
    assert (np.abs(shift + q // 2) <= 10).all(), shift
    assert set(model.ranking[-3:]) == set(t)


def test_the_k_hot_attack_adds_one_per_attacker_and_target():
    rows = coalition_vectors(SumPoisoning(0.1, "k-hot", targets=2), 3, np.zeros(8, np.int64),
                             np.array([1, 5]), 6, 100, np.random.default_rng(0))
    assert rows.tolist() == [[0, 1, 0, 0, 0, 1, 0, 0]] * 3
    promote = coalition_vectors(SumPoisoning(0.1, "promote", targets=2), 3,
                                np.zeros(8, np.int64), np.array([1, 5]), 12, 100,
                                np.random.default_rng(0))
    assert promote.sum(axis=0).tolist() == [0, 100, 0, 0, 0, 100, 0, 0]
    reverse = coalition_vectors(SumPoisoning(0.1, "reverse"), 4, np.arange(8) - 3,
                                np.zeros(0, np.int64), 12, 100, np.random.default_rng(0))
    assert (reverse.sum(axis=0) + np.arange(8) - 3).tolist() == (3 - np.arange(8)).tolist()


def test_poisoning_needs_the_secure_path_and_valid_settings():
    with pytest.raises(DprecError, match="aggregation=secure"):
        poison_sum(make_system("dp-pop", {"aggregation": "trusted"}), SumPoisoning(0.01),
                   np.random.default_rng(0))
    with pytest.raises(DprecError, match="clients hook"):
        poison_sum(make_system("popularity"), SumPoisoning(0.01), np.random.default_rng(0))
    with pytest.raises(DprecError, match="strategy"):
        SumPoisoning(0.01, "flood")  # type: ignore[arg-type]
    with pytest.raises(DprecError, match="amplitude"):
        SumPoisoning(0.01, amplitude=0)


@pytest.fixture(scope="module")
def cal_one_spare():
    """The round of dp-pop at min_honest = N - 1: one refused client leaves a release."""
    return calibrate(DpPopConfig(epsilon=2.0, k=K, n_clients=N, min_honest=N - 1),
                     D, N)


def _checked_fit(train, poisoning, validity):
    model = make_system("dp-pop", {"epsilon": 2.0, "k": K, "min_honest": N - 1,
                                   "validity": validity})
    poison_sum(model, poisoning, derive_generator(3, "poison"))
    return model.fit(train, derive_generator(7, "system", "dp-pop"))


def test_the_check_refuses_the_out_of_range_client_and_the_round_completes(
        train, cal_one_spare, monkeypatch):
    monkeypatch.setattr(pop_system, "calibrate", lambda *args: cal_one_spare)
    clean = _checked_fit(train, SumPoisoning(0.0), "prio3")
    unchecked_clean = _checked_fit(train, SumPoisoning(0.0), "none")
    np.testing.assert_array_equal(clean.noisy_counts, unchecked_clean.noisy_counts)
    assert clean.diagnostics()["upload_outcomes"]["summed"] == N
    assert clean.diagnostics()["upload_outcomes"]["refused"] == 0
    attack = SumPoisoning(1 / N, "out-of-range")
    on = _checked_fit(train, attack, "prio3")
    off = _checked_fit(train, attack, "none")
    assert on.diagnostics()["upload_outcomes"] == {"summed": N - 1, "refused": 1,
                                                   "below_threshold": 0, "lost": 0}
    assert on.diagnostics()["refused_reasons"] == {"validity: range": 1}
    assert off.diagnostics()["upload_outcomes"]["summed"] == N
    assert off.diagnostics()["refused_reasons"] == {}
    t = on.diagnostics()["validity"]["T"]
    # checked: the honest sum less the attacker's own honest row (entries within [-T, 1 + T])
    assert np.abs(on.noisy_counts - clean.noisy_counts).max() <= 1 + t
    # unchecked: about q/2 added to every item
    q = cal_one_spare.params.modulus
    assert np.median(np.abs(off.noisy_counts - clean.noisy_counts)) > q // 4


def test_the_check_passes_the_bounded_k_hot_attack(train, cal_one_spare, monkeypatch):
    monkeypatch.setattr(pop_system, "calibrate", lambda *args: cal_one_spare)
    model = _checked_fit(train, SumPoisoning(1 / N, "k-hot", targets=K), "prio3")
    assert model.diagnostics()["upload_outcomes"]["summed"] == N
