import numpy as np
import pytest

from dprec.errors import DprecError
from dprec.evaluation.outputs import checked_output


def test_checked_output_is_a_float_copy():
    raw = np.array([[1, 2], [3, 4]], np.int32)
    out = checked_output(raw, (2, 2), "m.score", "scores")
    assert out.dtype == np.float64
    out[0, 0] = np.nan
    assert raw[0, 0] == 1


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_checked_output_refuses_non_finite_values(bad):
    with pytest.raises(DprecError, match=r"m\.score returned 1 NaN or infinite scores out of 3"):
        checked_output([0.5, bad, 1.0], (3,), "m.score", "scores")


def test_checked_output_refuses_a_wrong_shape():
    with pytest.raises(DprecError, match=r"returned shape \(3,\), expected \(1, 3\)"):
        checked_output([0.5, 1.0, 2.0], (1, 3), "m.score", "scores")
