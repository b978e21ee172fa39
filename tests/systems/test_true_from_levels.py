"""privacy.true is one of the accountant's levels, never a mechanism formula beside them."""

import numpy as np
import pytest
import scipy.sparse as sp

from dprec.systems.registry import make_system


@pytest.fixture(scope="module")
def train():
    rng = np.random.default_rng(0)
    return sp.csr_matrix((rng.random((30, 40)) < 0.2).astype(np.float32))


@pytest.mark.parametrize("name", ["dplcf-sp", "dplcf-ap", "dplcf-oue", "bpr-mf"])
def test_true_is_the_event_level(train, name):
    params = {"epochs": 1} if name == "bpr-mf" else {}
    rep = make_system(name, params).fit(train, np.random.default_rng(0)).privacy_report()
    out = rep.to_json()
    assert out["true"] == out["levels"]["event"]
    assert out["true"]["delta"] == 0.0  # one bit: pure
    assert out["adjacency"] == "replace_one"
