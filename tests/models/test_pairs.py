"""models.pairs: the (users, items) query of every rating predictor, checked once."""

from __future__ import annotations

import numpy as np
import pytest

from dprec.errors import DprecError
from dprec.models.pairs import check_pairs


def test_integer_pairs_come_back_as_int64():
    u, i = check_pairs(np.array([0, 2], np.int32), [1, -1])
    assert u.dtype == i.dtype == np.int64
    assert u.tolist() == [0, 2] and i.tolist() == [1, -1]


@pytest.mark.parametrize("users, items, message", [
    ([0, 1], [0], "users and items must be 1-d arrays of equal length"),
    ([[0]], [[0]], "users and items must be 1-d arrays of equal length"),
    ([0.5], [0], "users must hold integer indices"),
    ([0], [1.0], "items must hold integer indices"),
])
def test_bad_pairs_are_refused_with_the_callers_prefix(users, items, message):
    with pytest.raises(DprecError, match=f"^M.predict: {message}"):
        check_pairs(np.asarray(users), np.asarray(items), "M.predict: ")


def test_empty_pairs_are_allowed():
    u, i = check_pairs(np.array([]), np.array([]))
    assert u.size == i.size == 0
