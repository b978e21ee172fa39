"""One Mechanism interface (issue 32 §4): every local randomiser samples, emits the DpEvent of
one use and describes itself; its cost is the accountant's answer for that event."""

from __future__ import annotations

import json
import math

import dp_accounting
import numpy as np
import pytest
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.mechanisms import BitFlip, Mechanism, event_guarantee
from dprec.mechanisms.gaussian import Gaussian
from dprec.mechanisms.laplace_rr import LaplaceRR
from dprec.mechanisms.numeric import BinaryMechanism, LaplaceMechanism, PiecewiseMechanism
from dprec.privacy.accountant import UnsupportedEventError
from dprec.privacy.pld_accountant import PldAccountant

# (mechanism, an input, its pure epsilon per use, sides)
CASES = [
    (BitFlip.symmetric(1.0), sp.csr_matrix(np.eye(3, dtype=np.float32)), 1.0, "two"),
    (BitFlip.asymmetric(2.0), sp.csr_matrix(np.eye(3, dtype=np.float32)), 2.0, "one"),
    (BitFlip.oue(1.0), sp.csr_matrix(np.eye(3, dtype=np.float32)),
     math.log((math.e + 1) / 2), "two"),
    (BinaryMechanism(2.5), np.array([-1.0, 0.0, 1.0]), 2.5, "two"),
    (PiecewiseMechanism(0.8), np.array([-1.0, 0.0, 1.0]), 0.8, "two"),
    (LaplaceMechanism(2.0, 1.0, 5.0), np.array([1.0, 3.0, 5.0]), 2.0, "two"),
    (LaplaceRR(1.0, 2.0), np.array([0.0, 0.5, 1.0]), math.inf, "none"),
]


@pytest.mark.parametrize("mech, x, eps, sides", CASES, ids=lambda c: getattr(c, "name", ""))
def test_every_mechanism_samples_emits_its_event_and_describes_itself(mech, x, eps, sides):
    assert isinstance(mech, Mechanism)
    out = mech(x, np.random.default_rng(0))
    assert out.shape == x.shape
    event = mech.dp_event()
    assert isinstance(event, dp_accounting.DpEvent)
    assert PldAccountant().supports(event)
    assert json.loads(json.dumps(mech.describe())) == mech.describe()
    g = event_guarantee(mech)
    assert (g.level, g.model, g.sides) == ("event", "local", sides)
    assert g.epsilon == pytest.approx(eps, rel=1e-12) if math.isfinite(eps) else g.epsilon == eps
    assert g == event_guarantee(event)


@pytest.mark.parametrize("mech, x, eps, sides", CASES[:6], ids=lambda c: getattr(c, "name", ""))
def test_count_copies_compose_basically(mech, x, eps, sides):
    g = event_guarantee(mech, 7, level="user")
    assert g.level == "user" and g.sides == sides
    assert g.epsilon == pytest.approx(7 * eps, rel=1e-12)


def test_an_event_without_a_pure_epsilon_is_refused_not_zero():
    gauss = Gaussian(2.0)
    assert isinstance(gauss, Mechanism)
    assert np.array_equal(gauss(np.zeros(3), np.random.default_rng(1)),
                          gauss.apply(np.zeros(3), np.random.default_rng(1)))
    with pytest.raises(UnsupportedEventError):
        event_guarantee(gauss)


def test_a_count_below_one_is_refused():
    with pytest.raises(DprecError, match="count must be an integer >= 1, got 0"):
        event_guarantee(BinaryMechanism(1.0), 0)
