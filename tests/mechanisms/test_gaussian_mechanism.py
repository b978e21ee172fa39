"""The Gaussian mechanism and DP-PrivRec's use of it: every noise draw has its event."""

import dp_accounting
import numpy as np
import pytest

from dprec.errors import DprecError
from dprec.mechanisms.gaussian import Gaussian, joint_event
from dprec.systems.privrec.accounting import privrec_noise_multipliers
from dprec.systems.privrec.config import PrivRecConfig
from dprec.systems.privrec.server import ReptileServer


def test_sigma_event_and_noise():
    g = Gaussian(2.0, 0.5)
    assert g.sigma == 1.0
    assert g.dp_event() == dp_accounting.GaussianDpEvent(2.0)
    out = g.apply(np.zeros(200_000), np.random.default_rng(0))
    assert out.std() == pytest.approx(1.0, rel=0.01)
    for bad in ((0.0, 1.0), (1.0, -1.0), (float("inf"), 1.0)):
        with pytest.raises(DprecError):
            Gaussian(*bad)


def test_joint_event_is_the_gdp_composition():
    # mu = 1/z composes as sqrt(sum mu_i^2): z = 3, 4 -> 1/z^2 = 1/9 + 1/16 -> z = 12/5
    assert joint_event([Gaussian(3.0), Gaussian(4.0, 7.0)]).noise_multiplier == pytest.approx(2.4)
    with pytest.raises(DprecError):
        joint_event([])


def test_dp_privrec_server_noise_is_its_mechanisms():
    cfg = PrivRecConfig(dp=True, clients_per_round=4, noise_multiplier=1.3,
                        budget_balance=0.7, server_lr=0.5)
    server = ReptileServer(np.zeros(3), np.arange(10), 10, cfg)
    update, count = server.mechanisms(2.0)
    z_d, z_b, z_eff = privrec_noise_multipliers(1.3, 0.7, 0.5)
    # Algorithm 2's sigma_D = (2 S z / M) sqrt(1/(1-h)), sigma_b = (2 z / M) sqrt(1/h)
    assert update.sigma == pytest.approx(2 * 2.0 * 1.3 / 4 / np.sqrt(0.3), rel=1e-12)
    assert count.sigma == pytest.approx(2 * 1.3 / 4 / np.sqrt(0.7), rel=1e-12)
    assert (update.noise_multiplier, count.noise_multiplier) == (z_d, z_b)
    assert server.round_event() == dp_accounting.GaussianDpEvent(z_eff)
