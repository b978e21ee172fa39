"""models.fitted: one not-fitted rule for every learned array (issue 22, §5)."""

from __future__ import annotations

import numpy as np
import pytest

from dprec.errors import NotFittedError
from dprec.models.fitted import fitted_array, require_fitted


class _Model:
    weights = fitted_array("_w", "(n,) the weights.")

    def __init__(self) -> None:
        self._w: np.ndarray | None = None


def test_a_fitted_array_raises_not_fitted_naming_the_class_until_it_is_set():
    m = _Model()
    with pytest.raises(NotFittedError, match=r"^_Model is not fitted; call fit\(\) first$"):
        _ = m.weights
    m._w = np.arange(3.0)
    assert m.weights is m._w
    assert _Model.weights.__doc__ == "(n,) the weights."


def test_a_fitted_array_is_read_only():
    with pytest.raises(AttributeError):
        _Model().weights = np.zeros(2)


def test_require_fitted_passes_an_array_through():
    x = np.ones(2)
    assert require_fitted(x, "M") is x
    with pytest.raises(NotFittedError, match="M is not fitted"):
        require_fitted(None, "M")
