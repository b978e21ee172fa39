"""DPSGD-MF, DPPS-MF, DPSGD-PNBM and DPPS-PNBM: privacy.true is read from the accountant's
levels over the run's event log (a pure mechanism stays pure), and every report states its
neighbouring relation as an :class:`~dprec.privacy.adjacency.Adjacency`."""

import ast
import re
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import dprec
from dprec.privacy.adjacency import Adjacency
from dprec.privacy.basic_accountant import BasicAccountant
from dprec.privacy.events import LocalReportDpEvent
from dprec.privacy.levels import account
from dprec.systems.registry import make_system

SMALL = {"dpsgd-mf": {"epochs": 3}, "dpps-mf": {"epochs": 2},
         "dpsgd-pnbm": {"iterations": 2, "min_ratings": 5}, "dpps-pnbm": {"iterations": 2}}


@pytest.fixture(scope="module")
def ratings() -> sp.csr_matrix:
    rng = np.random.default_rng(0)
    mask = rng.random((40, 20)) < 0.4
    vals = np.clip(np.rint(3.5 + rng.normal(0, 1, (40, 20))), 1, 5)
    return sp.csr_matrix(np.where(mask, vals, 0.0))


def _fit(name: str, train: sp.csr_matrix):
    return make_system(name, SMALL[name]).fit(train, np.random.default_rng(0))


def test_dpsgd_mf_true_is_the_pure_basic_event_level_of_the_log(ratings):
    s = _fit("dpsgd-mf", ratings)
    out = s.privacy_report().to_json()
    assert (out["true"]["epsilon"], out["true"]["delta"]) == (1.0, 0.0)  # 3 x 1/3, pure
    basic = account(s.model.events, 1e-6, BasicAccountant(), model="central").event
    assert (out["true"]["epsilon"], out["true"]["delta"]) == (basic.epsilon, basic.delta)
    assert out["event_basic"] == basic.to_json()


def test_dpsgd_mf_true_follows_the_event_log(ratings):
    s = _fit("dpsgd-mf", ratings)
    event = s.model.mechanism.dp_event()
    s.model.events.record(3, event, np.array([0]), count=int(ratings[0].nnz),
                          unit="interaction")  # a fourth read of user 0's ratings
    true = s.privacy_report().true
    assert true.epsilon == pytest.approx(4 / 3) and true.delta == 0.0


def test_dpps_pnbm_true_is_the_user_level_of_the_log(ratings):
    s = _fit("dpps-pnbm", ratings)
    cfg = s.model.config
    levels = account(s.model.events, 1e-6, model="central")
    out = s.privacy_report().to_json()
    assert levels.user.epsilon == pytest.approx(cfg.true_epsilon)
    assert out["true"]["epsilon"] == pytest.approx(levels.user.epsilon, rel=1e-5)  # 6 digits
    assert out["true"]["delta"] is None  # the sampler's delta is unknown
    assert out["events"] == s.model.events.to_json()
    s.model.events.record(1, LocalReportDpEvent(cfg.true_epsilon), np.array([0]), unit="user")
    assert s.privacy_report().true.epsilon == pytest.approx(2 * cfg.true_epsilon)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_report_states_the_adjacency(ratings, name):
    out = _fit(name, ratings).privacy_report().to_json()
    assert Adjacency(out["adjacency"]) is Adjacency.REPLACE_ONE


_ADJACENCY_WORD = re.compile(r"\b(replace_one|add_remove_one|zero_out)\b")


def test_no_adjacency_string_literal_outside_the_enum():
    """The neighbouring relation is passed as an Adjacency, never as a string: no string
    constant in dprec spells an adjacency value except the enum's own module."""
    root = Path(dprec.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).as_posix() == "privacy/adjacency.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and _ADJACENCY_WORD.search(node.value)):
                found.append(f"{path.relative_to(root)}:{node.lineno}: {node.value[:60]!r}")
    assert not found, "adjacency as a string literal:\n" + "\n".join(found)
