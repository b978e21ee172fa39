"""Poisoned clients: their reports are valid (the services' checks accept them, over the wire
too), the fraction is honoured, 0% is the unpoisoned run bit for bit, honest users' reports
and accounting are untouched, and poisoning measurably hurts HR@10."""

from __future__ import annotations

import numpy as np
import pytest

from dprec.data.synthetic import synthetic
from dprec.errors import DprecError
from dprec.evaluation.runner import Experiment
from dprec.protocol.batches import ReportBatch
from dprec.protocol.engine import Clients, ShufflingProxy
from dprec.protocol.messages import Message
from dprec.protocol.poisoning import (
    Poisoning,
    choose_attackers,
    choose_targets,
    poison,
)
from dprec.random import derive_generator
from dprec.systems.deployable import ProtocolInfo, check_forwarded, check_upload
from dprec.systems.dplcf.messages import ObfuscatedBits
from dprec.systems.registry import make_system

N_USERS, N_ITEMS = 300, 120


@pytest.fixture(scope="module")
def train():
    return synthetic(N_USERS, N_ITEMS, 6000, rng=0).binary()


def _wire(message: Message) -> Message:
    """The message as a service decodes it."""
    return type(message).from_bytes(message.to_bytes())


def _fit(system: str, params: dict, train, poisoning: Poisoning | None = None):
    model = make_system(system, params)
    hook = poison(model, poisoning, derive_generator(3, "poison")) if poisoning else None
    model.fit(train, derive_generator(7, "system", system))
    return model, hook


def test_attackers_honour_the_fraction_and_nest():
    drawn = {f: choose_attackers(943, f, np.random.default_rng(5))
             for f in (0.0, 0.01, 0.05, 0.1)}
    assert {f: len(a) for f, a in drawn.items()} == {0.0: 0, 0.01: 9, 0.05: 47, 0.1: 94}
    for a in drawn.values():
        assert len(np.unique(a)) == len(a) and (a >= 0).all() and (a < 943).all()
    assert set(drawn[0.01]) <= set(drawn[0.05]) <= set(drawn[0.1])
    # uniform: over many draws every user is an attacker about 10% of the time
    hits = np.zeros(50)
    rng = np.random.default_rng(0)
    for _ in range(2000):
        hits[choose_attackers(50, 0.1, rng)] += 1
    assert np.all(np.abs(hits / 2000 - 0.1) < 0.035)


@pytest.mark.parametrize("bad", [-0.1, 1.0, 1.5, float("nan")])
def test_bad_fractions_are_refused(bad):
    with pytest.raises(DprecError, match="fraction must be in"):
        Poisoning(bad)
    with pytest.raises(DprecError, match="fraction must be in"):
        choose_attackers(10, bad, np.random.default_rng(0))


def test_bad_settings_are_refused():
    with pytest.raises(DprecError, match="strategy must be one of"):
        Poisoning(0.1, "flood")  # type: ignore[arg-type]
    with pytest.raises(DprecError, match="targets must be an integer >= 1"):
        Poisoning(0.1, "promote", targets=0)
    with pytest.raises(DprecError, match="targets must be an integer in"):
        choose_targets(5, 6, np.random.default_rng(0))
    with pytest.raises(DprecError, match="does not simulate a wire protocol"):
        poison(make_system("popularity"), Poisoning(0.1), np.random.default_rng(0))


CASES = [
    ("dplcf-sp", {"neighbours": 10}),
    ("dplcf-oue", {"neighbours": 10}),
    ("fmf-ldp", {"epochs": 2, "k": 20, "shuffle_threshold": 50}),
    ("fmf-ldp", {"epochs": 2, "k": 20, "shuffle_threshold": 50, "mechanism": "piecewise"}),
]


class _Recording:
    """A clients hook that keeps every message the (poisoned) population sends."""

    def __init__(self, hook):
        self.hook = hook
        self.rounds: list[list] = []
        self.broadcasts: list = []

    def __call__(self, clients, n_users):
        inner = self.hook(clients, n_users) if self.hook else clients
        outer = self

        class Keep(Clients):  # records what the population yields
            def step(self, broadcast, round, rng):
                outer.broadcasts.append(broadcast)
                outer.rounds.append([])
                for m in inner.step(broadcast, round, rng):
                    outer.rounds[-1].append(m)
                    yield m

            def sent(self):
                return inner.sent()

        return Keep()


def _record(system, params, train, poisoning):
    model = make_system(system, params)
    hook = poison(model, poisoning, derive_generator(3, "poison")) if poisoning else None
    rec = _Recording(hook)
    model.clients_hook = rec
    model.fit(train, derive_generator(7, "system", system))
    return model, hook, rec


def _client_messages(rounds):
    """Per round: {user: that user's wire message}."""
    out = []
    for msgs in rounds:
        per = {}
        offset = 0
        for m in msgs:
            if isinstance(m, ReportBatch):
                per.update({int(c): cm for c, cm in zip(m.client_ids, m.to_messages(),
                                                        strict=True)})
            else:
                for i in range(m.n_clients):
                    per[offset + i] = ObfuscatedBits(m.packed[i:i + 1], m.n_items)
                offset += m.n_clients
        out.append(per)
    return out


@pytest.mark.parametrize("strategy", ["untargeted", "promote"])
@pytest.mark.parametrize("system, params", CASES)
def test_poisoned_reports_pass_the_services_checks(train, system, params, strategy):
    model, hook, rec = _record(system, params, train, Poisoning(0.1, strategy))
    info = ProtocolInfo(system, N_ITEMS, model.config)
    attackers = set(hook.clients.attackers.tolist())
    assert len(attackers) == 30
    for r, per in enumerate(_client_messages(rec.rounds)):
        assert set(per) == set(range(N_USERS))
        for user in attackers:  # the proxy's check on each client's submission
            check_upload(_wire(per[user]), info)
        if system.startswith("dplcf"):
            batch = ObfuscatedBits(np.concatenate([m.packed for m in rec.rounds[r]]), N_ITEMS)
        else:  # the server's check on the shuffled batch the proxy forwards
            proxy = ShufflingProxy(50)
            proxy.start(np.random.default_rng(r))
            [batch] = proxy.forward(rec.rounds[r])
        check_forwarded(_wire(batch), info)
    if system == "fmf-ldp" and params.get("mechanism") == "piecewise":
        # the attack uses the extremes of the mechanism's output range, no further
        bound = info.value_bound
        vals = np.concatenate([per[u].values for u in attackers for per in
                               _client_messages(rec.rounds)])
        np.testing.assert_allclose(np.abs(vals), bound, rtol=1e-6)


@pytest.mark.parametrize("system, params", CASES[::2])
def test_only_the_attackers_reports_change_and_accounting_is_the_same(train, system, params):
    clean, _, clean_rec = _record(system, params, train, None)
    bad, hook, bad_rec = _record(system, params, train, Poisoning(0.1, "promote"))
    attackers = set(hook.clients.attackers.tolist())
    first_clean, first_bad = (_client_messages(r.rounds)[0] for r in (clean_rec, bad_rec))
    changed = {u for u in first_clean if first_clean[u] != first_bad[u]}
    # every attacker's message is replaced, no honest one (the first round's broadcast is
    # the same, so the honest reports are equal draw for draw)
    assert changed == attackers
    assert hook.clients.replaced == len(attackers) * len(bad_rec.rounds)
    # who sent what, and so every user's guarantee, is the unpoisoned run's
    assert bad.events.to_json() == clean.events.to_json()
    assert bad.privacy_report().to_json() == clean.privacy_report().to_json()


@pytest.mark.parametrize("strategy", ["untargeted", "promote"])
@pytest.mark.parametrize("system, params", CASES[::2])
def test_zero_percent_is_the_unpoisoned_run_bit_for_bit(train, system, params, strategy):
    clean, _ = _fit(system, params, train)
    zero, hook = _fit(system, params, train, Poisoning(0.0, strategy))
    assert hook.clients is not None and hook.clients.replaced == 0
    if system == "fmf-ldp":
        np.testing.assert_array_equal(zero.V, clean.V)
    else:
        assert zero.broadcast == clean.broadcast
    assert zero.events.to_json() == clean.events.to_json()


@pytest.mark.parametrize("system, params, strategy, fraction", [
    ("dplcf-sp", {"epsilon": 2.0, "neighbours": 10}, "promote", 0.2),
    ("fmf-ldp", {"epochs": 5, "k": 50, "lr": 0.01, "shuffle_threshold": 50}, "untargeted",
     0.1),
])
def test_poisoning_measurably_hurts_hr_at_10(system, params, strategy, fraction):
    ds = synthetic(600, 300, 15000, rng=2)
    exp = Experiment(ds, [0, 1])

    def hr(fraction: float) -> float:
        def make():
            model = make_system(system, params)
            poison(model, Poisoning(fraction, strategy), derive_generator(0, "poison"))
            return model
        return exp.run(make).metrics["sampled"]["HR@10"]["mean"]

    clean, poisoned = hr(0.0), hr(fraction)
    assert clean > 0.4  # the protocol learns on this data (random: 0.1)
    assert poisoned < clean - 0.1, (clean, poisoned)


@pytest.mark.slow
def test_the_real_services_accept_poisoned_reports(tmp_path, train):
    from dprec.services.launch import Loopback, LoopbackTransport

    system, params = "fmf-ldp", {"epochs": "2", "k": "20", "shuffle_threshold": "50"}
    here, _ = _fit(system, params, train, Poisoning(0.1, "promote"))
    with Loopback(tmp_path) as lb:
        net = LoopbackTransport(lb, system, params, batch_senders=100)
        try:
            model = make_system(system, params)
            poison(model, Poisoning(0.1, "promote"), derive_generator(3, "poison"))
            model.transport = net
            model.fit(train, derive_generator(7, "system", system))
        finally:
            net.close()
        assert net.remote is not None and net.remote[1].requests == 2 * N_USERS
    np.testing.assert_array_equal(model.V, here.V)
