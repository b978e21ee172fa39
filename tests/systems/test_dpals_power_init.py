"""dpals' noisy power-iteration start (``init = "power"``, issue 33 §3): the clients' sum is
``sum_u a_u a_u^T Q`` within the rounding, noise off it finds the top singular subspace, one
client's contribution stays within its bound whatever the server broadcasts, and the
release is accounted (the calibrated noise grows; the report lists it)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from dprec.errors import InvalidParameterError
from dprec.systems.dpals.accounting import releases_epsilon
from dprec.systems.dpals.plan import releases, run_plan
from dprec.systems.dpals.power_init import (
    INIT_RELEASE,
    init_gamma,
    orthonormal,
    power_factors,
    power_statistics,
    unit_rows,
)
from dprec.systems.dpals.system import Dpals, DpalsConfig


def _blocks(seed: int = 0) -> sp.csr_matrix:
    """300 users x 40 items: three user groups on three item blocks of distinct sizes (a
    clear gap after the third singular value), plus sparse noise."""
    rng = np.random.default_rng(seed)
    dense = np.zeros((300, 40))
    for g, (lo, hi, p) in enumerate([(0, 16, 0.8), (16, 28, 0.6), (28, 40, 0.4)]):
        dense[g * 100:(g + 1) * 100, lo:hi] = rng.random((100, hi - lo)) < p
    dense = np.maximum(dense, rng.random(dense.shape) < 0.02)
    return sp.csr_matrix(dense)


def _projector(Q: np.ndarray) -> np.ndarray:
    return Q @ Q.T


def test_client_sum_is_the_power_step_within_rounding() -> None:
    train = _blocks()
    V = np.random.default_rng(1).standard_normal((40, 3))
    gamma = 1000.0
    total = power_statistics(V, train, gamma, 7, 1 << 20, np.arange(300))
    a = unit_rows(train)
    exact = a.T @ (a @ orthonormal(V))
    users_per_item = np.asarray((train > 0).sum(axis=0)).ravel()
    # each user's coordinate is off by less than 1 after rounding
    assert (np.abs(total / gamma - exact) <= users_per_item[:, None] / gamma + 1e-12).all()
    assert not np.allclose(total / gamma, 0.0)


def test_noise_off_recovers_the_top_singular_subspace() -> None:
    train = _blocks()
    gamma, rng = 1e6, np.random.default_rng(2)
    V = rng.standard_normal((40, 3))
    for i in range(30):
        total = power_statistics(V, train, gamma, 3, (1 << 20) + i, np.arange(300))
        V = power_factors(total, gamma, 0.1)
    top = np.linalg.svd(unit_rows(train).toarray(), full_matrices=False)[2][:3].T
    gap = np.linalg.norm(_projector(orthonormal(V)) - _projector(top), 2)
    assert gap < 1e-3
    # a random start is far from it
    far = np.linalg.norm(_projector(orthonormal(rng.standard_normal((40, 3))))
                         - _projector(top), 2)
    assert far > 0.5
    # the published factors have the random start's scale (root mean square init_scale)
    assert np.sqrt(np.mean(V ** 2)) == pytest.approx(0.1)


def test_power_factors_zero_the_tail() -> None:
    total = np.random.default_rng(0).integers(-50, 50, size=(10, 2))
    head = np.zeros(10, dtype=bool)
    head[:4] = True
    V = power_factors(total, 10.0, 0.1, head)
    assert (V[~head] == 0).all() and np.abs(V[head]).sum() > 0


@pytest.mark.parametrize("scale", [1e-9, 1.0, 1e9])
def test_one_contribution_is_bounded_whatever_the_broadcast(scale: float) -> None:
    """The client orthonormalises the server's factors itself: ||a a^T Q||_F <= 1."""
    row = sp.csr_matrix(np.r_[np.ones(12), np.zeros(28)][None, :])
    V = scale * np.random.default_rng(3).standard_normal((40, 3))
    V[:, 2] = V[:, 1]  # rank-deficient too
    gamma = init_gamma(12, 3)
    x = power_statistics(V, row, gamma, 1, 1 << 20, np.array([5]))
    rounding = np.sqrt(12 * 3)
    assert np.linalg.norm(x) <= gamma + rounding
    assert np.abs(x).max() <= np.ceil(gamma)


def _cfg(**kw: object) -> DpalsConfig:
    return DpalsConfig(epsilon=4.0, factors=3, k=8, steps=2, **kw)  # type: ignore[arg-type]


def test_init_release_is_accounted() -> None:
    plain, power = _cfg(), _cfg(init="power", init_iterations=2)
    assert plain.init == "random"  # the default is unchanged
    _, base = releases(plain, 40)
    _, more = releases(power, 40)
    assert INIT_RELEASE not in {r.name for r in base}
    init = next(r for r in more if r.name == INIT_RELEASE)
    assert init.count == 2
    for z in (0.5, 2.0, 8.0):
        assert releases_epsilon(more, z, 1e-6) > releases_epsilon(base, z, 1e-6)
    p0, p1 = run_plan(plain, 40, 300), run_plan(power, 40, 300)
    assert p1.multiplier > p0.multiplier  # the same target: more noise on every release
    assert [r.kind for r in p1.rounds] == ["init", "init", "step", "step"]
    assert len({r.round_id for r in p1.rounds}) == 4


@pytest.mark.parametrize("aggregation", ["secure", "trusted"])
def test_report_includes_the_init_release(aggregation: str) -> None:
    train = _blocks()
    m = Dpals("dpals", _cfg(init="power", init_iterations=2, aggregation=aggregation,
                            head_items=30))
    m.fit(train, np.random.default_rng(0))
    rep = m.privacy_report()
    assert rep is not None
    assert rep.true.epsilon <= 4.0 + 1e-6 and rep.true.epsilon == pytest.approx(4.0, rel=1e-3)
    init = [x for x in rep.mechanisms if x["release"] == INIT_RELEASE]
    assert len(init) == 1 and init[0]["rounds"] == 2
    events = rep.extra["events"]["events"]
    assert len(events) == 4  # counts, statistics, Gramian, init
    logged = [e for e in events if e["event"]["l2_sensitivity"] == init[0]["l2_sensitivity"]]
    assert len(logged) == 1 and logged[0]["users"] == 300
    assert logged[0]["max_copies_per_user"] == 2
    assert np.isfinite(m.item_factors).all()


def test_bad_init_settings_are_refused() -> None:
    with pytest.raises(InvalidParameterError):
        _cfg(init="svd")
    with pytest.raises(InvalidParameterError):
        _cfg(init="power", init_iterations=0)
    with pytest.raises(InvalidParameterError):
        _cfg(init="power", init_noise_ratio=0.0)


def test_a_device_sends_its_power_step_in_an_init_round() -> None:
    """Over the services a device builds the init round's vector itself (deploy.py)."""
    from types import SimpleNamespace

    from dprec.systems.dpals.deploy import DEPLOYMENT
    from dprec.systems.dpals.messages import DpalsModel
    from dprec.systems.dpals.plan import plan_of

    cfg = _cfg(init="power", n_clients=300)
    plan = plan_of(cfg, 40)
    assert plan.rounds[0].kind == "init"
    model = DpalsModel(b"\x01" * 32, np.random.default_rng(0).standard_normal((40, 3)),
                       np.zeros(0, np.int64))
    history = _blocks()[:1]
    y = DEPLOYMENT.device_vector(SimpleNamespace(settings=cfg, n_items=40), history, 0,
                                 np.random.default_rng(1), model, 0)
    assert y.shape == (40 * 3,)
    n = history.nnz
    assert 0 < np.linalg.norm(y) <= plan.init_gamma + np.sqrt(n * 3)
    assert (y.reshape(40, 3)[history.toarray()[0] == 0] == 0).all()
