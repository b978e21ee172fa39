"""Small problems shared by the sharded-backend tests."""

import pytest
import scipy.sparse as sp

from dprec.data.synthetic import synthetic


@pytest.fixture(scope="session")
def small_train() -> sp.csr_matrix:
    """1,500 users x 120 items: 3 blocks of 512 clients (the last one partial)."""
    return synthetic(1500, 120, 36_000, rng=3).matrix.tocsr()

