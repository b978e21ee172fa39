"""Guards for the dp-accounting internals dprec relies on (pinned to 0.6.0 in pyproject).

``privacy/shuffle.py`` builds the clone pair's PLD directly as a ``pld_pmf.DensePLDPmf``,
which is not part of dp-accounting's top-level API. If an upgrade changes it, these fail.
"""

import inspect
import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import privacy_loss_distribution as pld


def test_pinned_version():
    from importlib.metadata import version
    assert version("dp-accounting") == "0.6.0"
    assert dp_accounting.__name__ == "dp_accounting"


def test_dense_pmf_constructor_signature():
    params = list(inspect.signature(pld_pmf.DensePLDPmf.__init__).parameters)
    assert params[1:6] == ["discretization", "lower_loss", "probs", "infinity_mass",
                           "pessimistic_estimate"]


def test_dense_pmf_built_by_hand_gives_the_known_epsilon():
    """Randomized response at eps = 1: losses +-1 with probabilities e/(1+e), 1/(1+e)."""
    interval, eps = 1e-4, 1.0
    steps = round(eps / interval)
    probs = np.zeros(2 * steps + 1)
    probs[0], probs[-1] = 1 / (1 + math.e), math.e / (1 + math.e)
    one = pld.PrivacyLossDistribution(
        pld_pmf.DensePLDPmf(interval, -steps, probs, 0.0, True))
    assert one.get_epsilon_for_delta(0.0) == pytest.approx(eps, abs=interval)
    ref = pld.from_randomized_response(noise_parameter=2 / (1 + math.e), num_buckets=2,
                                       value_discretization_interval=interval)
    for k in (1, 10, 100):
        assert one.self_compose(k).get_epsilon_for_delta(1e-6) == pytest.approx(
            ref.self_compose(k).get_epsilon_for_delta(1e-6), rel=1e-3)
