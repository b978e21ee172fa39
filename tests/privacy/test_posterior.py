"""One posterior sample: the eps of exp(-beta sum_u l_u), 0 <= l_u <= B, checked against the
exact log-density ratio of neighbouring data sets on a grid."""

import numpy as np
import pytest

from dprec.errors import DprecError
from dprec.privacy.adjacency import Adjacency
from dprec.privacy.posterior import posterior_sample_epsilon

LO, HI = 1.0, 5.0
GRID = np.linspace(-40.0, 40.0, 40_001)


def _log_density(beta, users, reg):
    """Normalised log pi(theta) on GRID for a 1-parameter model (every prediction theta,
    clipped to [LO, HI]): -beta sum of squared errors - reg theta^2."""
    pred = np.clip(GRID, LO, HI)[:, None]
    data = np.concatenate(users) if users else np.zeros(0)
    energy = np.sum((data[None, :] - pred) ** 2, axis=1)
    out = -beta * energy - reg * GRID**2
    return out - np.logaddexp.reduce(out)


def _sup_ratio(beta, a, b, reg):
    return float(np.max(np.abs(_log_density(beta, a, reg) - _log_density(beta, b, reg))))


def test_replace_one_bound_holds_and_is_nearly_attained():
    beta, tau = 0.05, 4
    B = (HI - LO) ** 2 * tau
    eps = posterior_sample_epsilon(beta, B)
    assert eps == pytest.approx(2 * beta * B)
    others = [np.array([3.0, 4.0, 2.0, 5.0, 1.0])]
    # a strong prior keeps the mass where clip(theta) = LO: the all-HI and all-LO users then
    # differ by B both in the density and in the normaliser
    worst = _sup_ratio(beta, [np.full(tau, HI), *others], [np.full(tau, LO), *others], 50.0)
    assert 0.98 * eps < worst <= eps + 1e-9
    rng = np.random.default_rng(0)
    for _ in range(20):
        a, b = rng.uniform(LO, HI, tau), rng.uniform(LO, HI, tau)
        assert _sup_ratio(beta, [a, *others], [b, *others], 0.1) <= eps + 1e-9


def test_add_remove_bound_is_half_and_nearly_attained():
    beta, tau = 0.05, 4
    B = (HI - LO) ** 2 * tau
    eps = posterior_sample_epsilon(beta, B, Adjacency.ADD_REMOVE_ONE)
    assert eps == pytest.approx(beta * B)
    others = [np.array([3.0, 4.0, 2.0, 5.0, 1.0])]
    worst = _sup_ratio(beta, [np.full(tau, HI), *others], others, 50.0)
    assert 0.98 * eps < worst <= eps + 1e-9
    assert _sup_ratio(beta, [np.full(tau, HI), *others], [np.full(tau, LO), *others], 50.0) > eps


@pytest.mark.parametrize("args, match", [
    ((0.0, 1.0), "beta"), ((1.0, float("inf")), "loss_bound"), ((1.0, 1.0, "swap"), "adjacency"),
    ((1.0, 1.0, "add_remove_one"), "must be an Adjacency"),
    ((1.0, 1.0, "replace_one"), "must be an Adjacency"),
])
def test_bad_arguments(args, match):
    with pytest.raises(DprecError, match=match):
        posterior_sample_epsilon(*args)
