"""Per-user privacy ledger."""

import math

import dp_accounting
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dprec.errors import DprecError
from dprec.mechanisms.bitflip import BitFlip
from dprec.privacy.accountant import UnsupportedEventError
from dprec.privacy.basic_accountant import BasicAccountant
from dprec.privacy.events import EventLog, LocalReportDpEvent, ShuffledReportDpEvent
from dprec.privacy.ledger import BudgetExceededError, PrivacyLedger
from dprec.privacy.levels import account


def test_spend_and_can_spend_vectorised():
    ledger = PrivacyLedger(1.0, n_users=4)
    ledger.spend(np.array([0, 1]), 0.6)
    np.testing.assert_allclose(ledger.spent, [0.6, 0.6, 0.0, 0.0])
    mask = ledger.can_spend(np.array([0, 1, 2, 3]), np.array([0.5, 0.4, 1.0, 1.1]))
    np.testing.assert_array_equal(mask, [False, True, True, False])
    np.testing.assert_allclose(ledger.remaining(), [0.4, 0.4, 1.0, 1.0])
    np.testing.assert_allclose(ledger.remaining([1, 3]), [0.4, 1.0])


def test_spend_refuses_atomically():
    ledger = PrivacyLedger(1.0, n_users=3)
    ledger.spend([0, 1, 2], 0.5)
    with pytest.raises(BudgetExceededError, match="budget 1: user 2 would reach 1.2"):
        ledger.spend([0, 2], [0.1, 0.7])
    np.testing.assert_allclose(ledger.spent, [0.5, 0.5, 0.5])  # nothing changed
    assert isinstance(BudgetExceededError("x"), DprecError)


def test_repeated_users_are_summed_by_spend():
    ledger = PrivacyLedger(1.0)
    assert ledger.can_spend([5, 5], 0.6).all()  # each entry alone fits
    with pytest.raises(BudgetExceededError):
        ledger.spend([5, 5], 0.6)  # together they do not
    ledger.spend([5, 5, 5], 0.3)
    assert ledger.spent[5] == pytest.approx(0.9)
    assert len(ledger) == 6  # grew to hold user 5


def test_float_slack_lets_exact_budget_be_used():
    ledger = PrivacyLedger(1.0, n_users=1)
    for _ in range(10):
        ledger.spend(0, 0.1)
    assert ledger.spent[0] == pytest.approx(1.0)
    assert not ledger.can_spend(0, 1e-6)[0]


def test_infinite_budget_tracks_only():
    ledger = PrivacyLedger(math.inf, n_users=2)
    ledger.spend([0, 1], 1e6)
    ledger.spend([1, 3], [2.5, math.inf])
    np.testing.assert_array_equal(ledger.spent, [1e6, 1e6 + 2.5, 0.0, math.inf])
    assert ledger.can_spend([0], 1e9).all()


def test_validation():
    with pytest.raises(DprecError, match="budget_eps must be > 0, got 0"):
        PrivacyLedger(0.0)
    ledger = PrivacyLedger(1.0, 2)
    with pytest.raises(DprecError, match="users must be >= 0, got -1"):
        ledger.spend([-1], 0.1)
    with pytest.raises(DprecError, match="eps must be >= 0"):
        ledger.spend([0], -0.1)
    with pytest.raises(DprecError, match="integer indices"):
        ledger.spend(np.array([0.5]), 0.1)
    ledger.spend(np.array([], dtype=np.int64), 0.1)
    assert ledger.spent.sum() == 0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.lists(st.integers(0, 9), min_size=1, max_size=8), st.floats(0.0, 0.7)),
        max_size=20,
    )
)
def test_never_exceeds_budget_and_sums_accepted_spends(calls):
    ledger = PrivacyLedger(2.0, n_users=10)
    expected = np.zeros(10)
    for users, eps in calls:
        try:
            ledger.spend(np.array(users), eps)
        except BudgetExceededError:
            continue
        np.add.at(expected, users, eps)
    np.testing.assert_allclose(ledger.spent, expected)
    assert (ledger.spent <= 2.0 * (1 + 1e-9)).all()


def _random_log(rng: np.random.Generator, one_sided: bool) -> EventLog:
    log = EventLog(30)
    flip = (BitFlip.asymmetric(1.5) if one_sided else BitFlip.oue(1.0)).dp_event()
    for r in range(6):
        users = np.flatnonzero(rng.random(30) < 0.6)
        log.record(r, flip, users, count=int(rng.integers(1, 20)), unit="interaction")
        log.record(r, LocalReportDpEvent(0.3), users[::2], count=3)
        log.record(r, ShuffledReportDpEvent(2.5, max(1, users.size)), users[1::3])
    return log


@pytest.mark.parametrize("one_sided", [False, True])
def test_ledger_from_log_equals_basic_composition_per_user(one_sided):
    log = _random_log(np.random.default_rng(7), one_sided)
    ledger = PrivacyLedger.from_log(log, budget_eps=1e9)
    keys, counts = log.count_matrix("user")
    basic = BasicAccountant()
    for u in range(log.n_users):
        events = [(e, int(c)) for (e, _), c in zip(keys, counts[u], strict=True)]
        assert ledger.spent[u] == pytest.approx(basic.compose(events).epsilon, rel=1e-12)
    levels = account(log, 1e-6)
    assert levels.user_basic is not None
    assert ledger.spent.max() == pytest.approx(levels.user_basic.epsilon, rel=1e-12)
    assert levels.user_basic.sides == ("one" if one_sided else "two")
    assert (ledger.spent > 0).sum() == (counts.sum(axis=1) > 0).sum()


def test_ledger_from_log_records_past_the_budget_and_keeps_working():
    log = EventLog(3)
    log.record(0, LocalReportDpEvent(1.0), [0, 1], count=4)
    ledger = PrivacyLedger.from_log(log, budget_eps=3.0)
    np.testing.assert_allclose(ledger.spent, [4.0, 4.0, 0.0])
    np.testing.assert_allclose(ledger.remaining(), [-1.0, -1.0, 3.0])
    np.testing.assert_array_equal(ledger.can_spend([0, 2], 1.0), [False, True])
    ledger.spend([2], 2.5)
    assert PrivacyLedger.from_log(EventLog(), 1.0).spent.size == 0


def test_spend_event_charges_pure_epsilon():
    ledger = PrivacyLedger(10.0, n_users=2)
    ledger.spend_event([0, 1], LocalReportDpEvent(0.5), count=4)
    np.testing.assert_allclose(ledger.spent, [2.0, 2.0])
    ledger.spend_event([0], BitFlip.asymmetric(2.0).dp_event(), count=3)  # presence side
    np.testing.assert_allclose(ledger.spent, [8.0, 2.0])
    with pytest.raises(BudgetExceededError):
        ledger.spend_event([0], LocalReportDpEvent(1.0), count=3)
    np.testing.assert_allclose(ledger.spent, [8.0, 2.0])
    with pytest.raises(UnsupportedEventError):
        ledger.spend_event([0], dp_accounting.GaussianDpEvent(1.0))
    with pytest.raises(DprecError, match="count must be an integer >= 0"):
        ledger.spend_event([0], LocalReportDpEvent(1.0), count=-1)
