"""Privacy events and the event log: validation, per-user counts, rounds, JSON summary."""

import json
import math
import time

import dp_accounting
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dprec.errors import DprecError
from dprec.mechanisms.bitflip import BitFlip
from dprec.mechanisms.numeric import BinaryMechanism, PiecewiseMechanism
from dprec.privacy.events import (
    BitFlipDpEvent,
    EventLog,
    LocalReportDpEvent,
    ShuffledReportDpEvent,
    describe_event,
    event_to_json,
)


def test_mechanisms_emit_their_events():
    sym = BitFlip.symmetric(1.0)
    assert sym.dp_event() == BitFlipDpEvent(sym.p, sym.q)
    assert BitFlip.asymmetric(2.0).dp_event() == BitFlipDpEvent(1.0, math.exp(-2.0))
    oue = BitFlip.oue(1.0)
    assert oue.dp_event() == BitFlipDpEvent(0.5, 1.0 / (math.e + 1.0))
    assert BinaryMechanism(2.5).dp_event() == LocalReportDpEvent(2.5)
    assert PiecewiseMechanism(0.5).dp_event() == LocalReportDpEvent(0.5)
    # the parameters for the report's mechanisms list
    assert sym.describe()["p"] == sym.p and BinaryMechanism(2.5).describe()["epsilon"] == 2.5


def test_events_are_frozen_hashable_dp_events():
    e = BitFlipDpEvent(0.75, 0.25)
    assert isinstance(e, dp_accounting.DpEvent)
    assert hash(e) == hash(BitFlipDpEvent(0.75, 0.25)) and e != BitFlipDpEvent(0.75, 0.2)
    with pytest.raises(AttributeError):
        e.p = 0.9  # type: ignore[misc]
    assert {ShuffledReportDpEvent(2.5, 943): 1}[ShuffledReportDpEvent(2.5, 943)] == 1


@pytest.mark.parametrize(
    "make, msg",
    [
        (lambda: BitFlipDpEvent(0.3, 0.3), "q < p"),
        (lambda: BitFlipDpEvent(1.2, 0.3), "p must be in"),
        (lambda: BitFlipDpEvent(0.5, -0.1), "q must be in"),
        (lambda: LocalReportDpEvent(0.0), "epsilon must be finite and > 0, got 0"),
        (lambda: LocalReportDpEvent(math.inf), "epsilon must be finite"),
        (lambda: ShuffledReportDpEvent(2.5, 0), "n must be an integer >= 1, got 0"),
        (lambda: ShuffledReportDpEvent(2.5, 3.5), "n must be an integer"),
        (lambda: ShuffledReportDpEvent(-1.0, 10), "epsilon0 must be finite and > 0"),
    ],
)
def test_event_validation(make, msg):
    with pytest.raises(DprecError, match=msg):
        make()


def test_describe_and_json():
    e = BitFlipDpEvent(0.7310585786300049, 0.2689414213699951)
    assert describe_event(e) == "BitFlipDpEvent(p=0.731059, q=0.268941)"
    nested = dp_accounting.SelfComposedDpEvent(LocalReportDpEvent(1.0), 3)
    text = "SelfComposedDpEvent(event=LocalReportDpEvent(epsilon=1), count=3)"
    assert describe_event(nested) == text
    assert event_to_json(ShuffledReportDpEvent(2.5, 943)) == {
        "type": "ShuffledReportDpEvent",
        "epsilon0": 2.5,
        "n": 943,
    }
    assert event_to_json(dp_accounting.NonPrivateDpEvent()) == {"type": "NonPrivateDpEvent"}


def test_record_counts_per_user_and_level():
    log = EventLog(5)
    flip = BitFlipDpEvent(0.75, 0.25)
    log.record(0, flip, np.array([0, 1, 2]), count=10, unit="interaction")
    log.record(1, flip, np.array([0, 1]), count=10, unit="interaction")
    log.record(1, LocalReportDpEvent(1.0), np.array([1, 1, 3]), count=2)  # user 1 twice
    np.testing.assert_array_equal(log.counts(flip, "interaction"), [20, 20, 10, 0, 0])
    # one interaction is in one bit per record
    np.testing.assert_array_equal(log.counts(flip, "interaction", "event"), [2, 2, 1, 0, 0])
    report = LocalReportDpEvent(1.0)
    np.testing.assert_array_equal(log.counts(report), [0, 4, 0, 2, 0])
    np.testing.assert_array_equal(log.counts(report, level="event"), [0, 4, 0, 2, 0])
    np.testing.assert_array_equal(log.counts(LocalReportDpEvent(2.0)), np.zeros(5))
    keys, m = log.count_matrix("event")
    assert keys == [(flip, "interaction"), (report, "user")]
    np.testing.assert_array_equal(m, [[2, 0], [2, 4], [1, 0], [0, 2], [0, 0]])
    assert log.rounds == {0, 1} and len(log) == 3 and log.n_users == 5
    np.testing.assert_array_equal(log.participants(0), [0, 1, 2])
    np.testing.assert_array_equal(log.participants(1), [0, 1, 3])
    assert log.participants(7).size == 0


def test_log_grows_with_user_ids_and_keeps_old_rounds():
    log = EventLog()
    e = LocalReportDpEvent(1.0)
    log.record(0, e, [2])
    log.record(1, e, [40, 3])
    log.record(2, e, [1000])
    assert log.n_users == 1001
    np.testing.assert_array_equal(log.participants(0), [2])
    np.testing.assert_array_equal(log.participants(1), [3, 40])
    np.testing.assert_array_equal(log.participants(2), [1000])
    counts = log.counts(e)
    assert counts.size == 1001 and counts.sum() == 4 and counts[1000] == 1
    log.record(0, e, [5])  # back to an earlier round
    np.testing.assert_array_equal(log.participants(0), [2, 5])


def test_to_json_is_a_summary_without_user_lists():
    log = EventLog(1000)
    flip = BitFlipDpEvent(0.75, 0.25)
    log.record(0, flip, np.arange(1000), count=1682, unit="interaction")
    log.record(3, flip, np.arange(10), count=1682, unit="interaction")
    out = log.to_json()
    assert json.loads(json.dumps(out)) == out
    assert out["rounds"] == [0, 3] and out["participants"] == {"0": 1000, "3": 10}
    (ev,) = out["events"]
    assert ev["event"] == {"type": "BitFlipDpEvent", "p": 0.75, "q": 0.25}
    assert ev["unit"] == "interaction" and ev["records"] == 2
    assert ev["copies"] == 1010 * 1682 and ev["users"] == 1000 and ev["max_copies_per_user"] == 3364
    assert len(json.dumps(out)) < 1000  # no per-user lists


def test_record_validation():
    log = EventLog(3)
    e = LocalReportDpEvent(1.0)
    with pytest.raises(DprecError, match="round must be an integer >= 0, got -1"):
        log.record(-1, e, [0])
    with pytest.raises(DprecError, match="count must be an integer >= 1, got 0"):
        log.record(0, e, [0], count=0)
    with pytest.raises(DprecError, match="unit must be one of"):
        log.record(0, e, [0], unit="item")  # type: ignore[arg-type]
    with pytest.raises(DprecError, match="users must be integer ids"):
        log.record(0, e, np.array([0.5]))
    with pytest.raises(DprecError, match="users must be >= 0, got -2"):
        log.record(0, e, [-2])
    with pytest.raises(DprecError, match="dp_accounting.DpEvent"):
        log.record(0, {"epsilon": 1.0}, [0])  # type: ignore[arg-type]
    with pytest.raises(DprecError, match="hashable"):
        log.record(0, dp_accounting.ComposedDpEvent([e, e]), [0])
    with pytest.raises(DprecError, match="n_users must be an integer >= 0"):
        EventLog(-1)
    assert len(log) == 0 and log.rounds == frozenset()


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 4),  # round
            st.sampled_from([0, 1]),  # which event
            st.lists(st.integers(0, 30), max_size=12),  # users
            st.integers(1, 5),  # count
            st.sampled_from(["user", "interaction"]),
        ),
        max_size=15,
    )
)
def test_counts_match_a_per_record_reference(records):
    assume(any(users for _, _, users, _, _ in records))
    events = [LocalReportDpEvent(1.0), BitFlipDpEvent(0.75, 0.25)]
    log = EventLog()
    ref: dict = {}
    seen: dict = {}
    for r, which, users, count, unit in records:
        log.record(r, events[which], np.array(users, dtype=np.int64), count=count, unit=unit)
        cop, rec = ref.setdefault((which, unit), ({}, {}))
        for u in users:
            cop[u] = cop.get(u, 0) + count
            rec[u] = rec.get(u, 0) + 1
        seen.setdefault(r, set()).update(users)
    assert log.n_users == max(u for _, _, users, _, _ in records for u in users) + 1
    for (which, unit), (cop, rec) in ref.items():
        got = log.counts(events[which], unit)
        want = np.zeros(log.n_users, dtype=np.int64)
        for u, c in cop.items():
            want[u] = c
        np.testing.assert_array_equal(got, want)
        got_event = log.counts(events[which], unit, "event")
        for u, c in (rec if unit == "interaction" else cop).items():
            assert got_event[u] == c
    for r, users in seen.items():
        np.testing.assert_array_equal(log.participants(r), sorted(users))
    assert log.rounds == set(seen)


def test_recording_is_vectorised_over_users():
    n = 100_000
    users = np.arange(n)
    log = EventLog(n)
    event = ShuffledReportDpEvent(2.5, n)
    start = time.perf_counter()
    for r in range(200):
        log.record(r // 10, event, users)
    elapsed = time.perf_counter() - start
    assert log.counts(event).sum() == 200 * n
    assert elapsed < 10.0  # ~0.1 s vectorised; a Python loop per user takes minutes
