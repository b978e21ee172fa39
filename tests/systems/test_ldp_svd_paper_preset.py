"""Seed 001's ``--preset paper``: plain Funk SVD r_hat = U_u . I_i (Eq. 6), no biases."""

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

from dprec.systems.registry import spec

SEED_001 = ("laplace-svd", "laplace-rr-svd", "ldp-svd", "nondp-svd")


@pytest.mark.parametrize("name", SEED_001)
def test_paper_preset_turns_the_biases_off(name):
    assert spec(name).paper_config().biases is False
    assert spec(name).default_config().biases is True


@pytest.mark.parametrize("name", ("laplace-rr-svd", "nondp-svd"))
def test_paper_system_predicts_plain_u_dot_i(name):
    rng = np.random.default_rng(0)
    n_users, n_items, n = 60, 40, 900
    cells = rng.choice(n_users * n_items, n, replace=False)
    train = sp.csr_matrix((rng.integers(1, 6, n).astype(np.float32),
                           (cells // n_items, cells % n_items)), shape=(n_users, n_items))
    s = spec(name)
    cfg = s.paper_config()
    extra = {"epochs": 3, "factors": 5}
    if name != "nondp-svd":
        extra.update(rating_min=1, rating_max=5)
    model = s.build(replace(cfg, **extra)).fit(train, np.random.default_rng(1))
    svd = model.model
    assert not np.any(svd.user_biases) and not np.any(svd.item_biases)
    coo = train.tocoo()
    users, items = coo.row[:5].astype(np.int64), coo.col[:5].astype(np.int64)
    pred = model.predict(users, items)
    plain = np.sum(svd.user_factors[users] * svd.item_factors[items], axis=1)
    lo, hi = (1, 5) if name != "nondp-svd" else (-np.inf, np.inf)
    assert pred == pytest.approx(np.clip(plain, lo, hi))
