"""One draw path for dpals' and dp-fedavg's clients (issue 31): a simulated client over the
services draws its noise share as a device does
(:func:`~dprec.protocol.secure_sum.deploy.device_share`), truncated to the round's validity
check, so an honest proved upload always verifies. Before, the simulated clients drew
untruncated shares and an honest upload could be refused (w.p. at most eta); the checks here
are tightened so that an untruncated share breaks them about half the time (the old draws
pass all 24 clients w.p. about 2^-24)."""

from __future__ import annotations

import copy
import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

from dprec.data.synthetic import synthetic
from dprec.protocol.secure_sum import deploy as deploy_module
from dprec.protocol.secure_sum.checks import validity_terms
from dprec.protocol.secure_sum.vdaf.contribution import ContributionCheck
from dprec.protocol.secure_sum.vdaf.noise_bounds import meets_truncation
from dprec.systems.dp_fedavg.deploy import DEPLOYMENT as FEDAVG
from dprec.systems.dp_fedavg.device import client_update
from dprec.systems.dp_fedavg.messages import FedAvgModel
from dprec.systems.dp_fedavg.plan import plan_of as fedavg_plan
from dprec.systems.dp_fedavg.plan import update_check
from dprec.systems.dp_fedavg.system import DpFedAvgConfig
from dprec.systems.dpals import clients as dpals_clients
from dprec.systems.dpals.clients import DpalsClients
from dprec.systems.dpals.plan import plan_of as dpals_plan
from dprec.systems.dpals.serve import server_of
from dprec.systems.dpals.system import DpalsConfig

N_USERS, N_ITEMS = 24, 60


@pytest.fixture(scope="module")
def train():
    return synthetic(N_USERS, N_ITEMS, 600, rng=3).binary()


def tightened(check: ContributionCheck, segments: list[tuple[int, float]]) -> ContributionCheck:
    """``check`` with its coordinate truncation ``T`` lowered to the median of
    ``max_j |z_j|`` over 400 untruncated shares of ``segments`` ``(dimension, mu_share)``:
    an untruncated share breaks it about half the time."""
    tr = check.truncation
    assert tr is not None
    rng = np.random.default_rng(11)
    draws = np.array([np.abs(np.concatenate([rng.poisson(mu, d) - rng.poisson(mu, d)
                                             for d, mu in segments])).max()
                      for _ in range(400)])
    t = int(np.median(draws))
    assert t < tr.coordinate_bound and draws.max() > t
    out = copy.copy(check)
    out.truncation = dataclasses.replace(tr, coordinate_bound=t)
    return out


def _meets(check: ContributionCheck, v: np.ndarray, y: np.ndarray) -> bool:
    return meets_truncation(check.truncation, y - v, vector=v,
                            l2_bound_sq=check.circuit.l2_bound_sq)


def test_dpals_simulated_devices_draw_the_truncated_share_a_device_proves(train, monkeypatch):
    cfg = DpalsConfig(epsilon=2.0, k=5, steps=1, n_clients=N_USERS)
    assert cfg.validity == "prio3"  # the default
    plan = dpals_plan(cfg, N_ITEMS)
    real = dpals_clients.round_check
    monkeypatch.setattr(dpals_clients, "round_check", lambda p, rp: tightened(
        real(p, rp), [(s.dimension, s.mu_share) for s in rp.segments]))
    events = {r.name: r.event(plan.multiplier) for r in plan.releases}
    clients = DpalsClients(train, np.arange(N_USERS), cfg, plan, 7, events, devices=True)
    model = server_of(cfg, N_ITEMS, N_USERS).start(np.random.default_rng(0))
    block = next(clients.step(model, 0, np.random.default_rng(0)))
    assert block.total is None and block.check is not None
    rows = np.stack(list(block.vectors()))
    exact = np.stack([clients._exact(i, i + 1) for i in range(N_USERS)])
    assert all(_meets(block.check, v, y) for v, y in zip(exact, rows, strict=True))


def test_dp_fedavg_simulated_devices_draw_what_a_device_uploads(train, monkeypatch):
    """The simulated device's noisy update is the device's own ``y`` bit for bit (the same
    generator), and with a tightened check both are truncated to it."""
    cfg = DpFedAvgConfig(epsilon=2.0, rounds=1, rate=1.0, n_clients=N_USERS)
    plan = fedavg_plan(cfg, N_ITEMS, N_USERS)
    check = tightened(update_check(plan, cfg.clip), [(plan.dimension, plan.share_mu)])
    monkeypatch.setattr(FEDAVG, "check_of_round", lambda settings, d, r: check)
    seen = []
    monkeypatch.setattr(deploy_module, "proved_row",
                        lambda chk, pk, sk, y, r: seen.append(y) or b"")
    V = np.random.default_rng(4).normal(scale=0.1, size=(N_ITEMS, cfg.factors))
    model = FedAvgModel(bytes(range(32)), V)
    terms = SimpleNamespace(settings=cfg, n_items=N_ITEMS, proxy_key=bytes(32),
                            proxy_published={"validity": validity_terms(
                                FEDAVG.checks(cfg, N_ITEMS))})
    for u in range(N_USERS):
        FEDAVG.client_step(terms, train[u], 0, np.random.default_rng([u, 9]), u,
                           lambda: model)
        y, sampled = client_update(V, train[u], alpha=cfg.alpha, reg=cfg.reg,
                                   clip=cfg.clip, gamma=plan.gamma, rate=1.0,
                                   share_mu=plan.share_mu, rng=np.random.default_rng([u, 9]),
                                   check=check)
        assert sampled
        np.testing.assert_array_equal(seen[-1], y)
        v, _ = client_update(V, train[u], alpha=cfg.alpha, reg=cfg.reg,
                             clip=cfg.clip, gamma=plan.gamma, rate=1.0, share_mu=None,
                             rng=np.random.default_rng([u, 9]))
        assert _meets(check, v, y)
