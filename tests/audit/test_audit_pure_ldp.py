"""OUE cross-checked against an outside implementation, pure-ldp 1.2.0 (Cormode, Maddock,
Maple), whose ``UEClient(use_oue=True)`` perturbs a one-hot vector with p = 1/2,
q = 1/(e^eps + 1) using numpy's global generator."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from dprec.audit.distinguisher import two_input_audit
from dprec.audit.mechanisms import AuditSettings, audit_oue_replace
from dprec.mechanisms.bitflip import BitFlip

_core = pytest.importorskip("pure_ldp.core")


def _load_ue_client():
    """pure-ldp's UE client module alone: its package __init__ also imports the RAPPOR
    server, which needs scikit-learn (not a dependency of the client)."""
    path = Path(_core.__file__).parents[1] / "frequency_oracles" / "unary_encoding" / "ue_client.py"
    spec = importlib.util.spec_from_file_location("pure_ldp_ue_client", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pure_ldp = _load_ue_client()

EPS, TRIALS = 1.5, 4_000


@pytest.fixture
def outside_rng():
    """pure-ldp draws from numpy's and Python's global generators: seed them, then restore."""
    np_state, py_state = np.random.get_state(), random.getstate()
    np.random.seed(11)
    random.seed(11)
    yield
    np.random.set_state(np_state)
    random.setstate(py_state)


def _theirs(value: int, n: int) -> np.ndarray:
    client = pure_ldp.UEClient(EPS, 2, use_oue=True)
    return np.array([client.privatise(value + 1) for _ in range(n)])  # 1-based items


def test_same_flip_probabilities():
    client = pure_ldp.UEClient(EPS, 2, use_oue=True)
    ours = BitFlip.oue(EPS)
    assert client.p == pytest.approx(ours.p, rel=1e-12)
    assert client.q == pytest.approx(ours.q, rel=1e-12)


def test_same_output_law_and_same_audit(outside_rng):
    ours = BitFlip.oue(EPS)
    theirs0 = _theirs(0, TRIALS)
    assert theirs0.shape == (TRIALS, 2) and set(np.unique(theirs0)) <= {0, 1}
    mine = ours.obfuscate_dense(
        __import__("scipy.sparse", fromlist=["csr_matrix"]).csr_matrix(
            (np.ones(TRIALS), np.zeros(TRIALS, int), np.arange(TRIALS + 1)),
            shape=(TRIALS, 2)), np.random.default_rng(3), np.uint8)
    # the four output patterns of value 0 have the same law (chi-square, 2 x 4 table)
    table = np.array([np.bincount(2 * x[:, 0] + x[:, 1], minlength=4) for x in (theirs0, mine)])
    assert stats.chi2_contingency(table).pvalue > 1e-3

    # the same audit on their client: a lower bound below eps and close to ours
    def sample(x: int, n: int, rng: np.random.Generator) -> np.ndarray:
        bits = _theirs(0 if x else 1, n)
        return (bits[:, 0] - bits[:, 1]).astype(float)

    outcome = two_input_audit(sample, TRIALS, 0.01, 0.0, np.random.default_rng(0))
    theirs_eps = outcome.chosen.epsilon
    mine_eps = audit_oue_replace(ours, AuditSettings(trials=TRIALS, seed=5)).empirical_lower
    assert theirs_eps <= EPS and mine_eps <= EPS
    assert theirs_eps > 0.6 * EPS and abs(theirs_eps - mine_eps) < 0.25
