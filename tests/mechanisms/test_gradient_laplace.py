"""DPSGD-PNBM's noise is a mechanism of its own (issue 22, §5), the one PNBM trains with."""

from __future__ import annotations

import numpy as np
import pytest

from dprec.errors import DprecError, check_int, check_real
from dprec.mechanisms import gradient_laplace
from dprec.models import pnbm


def test_dpsgd_pnbm_trains_with_the_mechanism():
    assert isinstance(pnbm.DPSGDPNBM().mechanism, gradient_laplace.GradientLaplace)


def test_scale_is_gamma_k_sensitivity_over_epsilon():
    m = gradient_laplace.GradientLaplace(2.0, 10, 0.5, 4.0, 0.5)
    # e_max(3) = 0.5 + 3/4, DeltaF_3 = 2 * 1.25 * 4 / 0.5 = 20, b_3 = 0.5 * 10 * 20 / 2 = 50
    assert m.sensitivity(3) == pytest.approx(20.0)
    assert m.scale(3) == pytest.approx(50.0)
    noisy = m(np.zeros((200, 200)), 3, np.random.default_rng(0))
    assert np.std(noisy) == pytest.approx(np.sqrt(2) * 50.0, rel=0.02)


def test_the_checks_moved_to_errors_keep_their_messages():
    with pytest.raises(DprecError, match=r"t must be an integer >= 1, got True"):
        check_int("t", True, 1)
    with pytest.raises(DprecError, match=r"gamma must be a finite number > 0 and <= 1, got 2"):
        check_real("gamma", 2, low=0.0, low_open=True, high=1.0)
    with pytest.raises(DprecError, match="epsilon must be a finite number > 0"):
        gradient_laplace.GradientLaplace(0.0, 1, 1.0, 4.0, 1.0)
