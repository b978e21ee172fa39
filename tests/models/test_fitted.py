"""models.fitted: one not-fitted rule for every learned array (issue 22, §5)."""

from __future__ import annotations

import numpy as np
import pytest

from dprec.errors import NotFittedError
from dprec.models.configured import Configured
from dprec.models.fitted import fitted_array, fitted_flag, fitted_value, require_fitted


class _Model:
    weights = fitted_array("_w", "(n,) the weights.")
    mean = fitted_value("_mu", "_w", "mu, a learned scalar.")
    is_fitted = fitted_flag("_w")

    def __init__(self) -> None:
        self._w: np.ndarray | None = None
        self._mu = 0.0


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


def test_a_fitted_value_is_guarded_by_its_array_and_the_flag_follows_it():
    m = _Model()
    assert m.is_fitted is False
    with pytest.raises(NotFittedError, match=r"^_Model is not fitted"):
        _ = m.mean
    m._w, m._mu = np.arange(3.0), 2.5
    assert m.is_fitted is True
    assert m.mean == 2.5
    with pytest.raises(AttributeError):
        m.is_fitted = False


def test_configured_holds_the_given_config_or_the_defaults():
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Cfg:
        k: int = 3

    class M(Configured[Cfg], config=Cfg):
        pass

    assert M().config == Cfg()
    given = Cfg(k=7)
    assert M(given).config is given
