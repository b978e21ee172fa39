"""A pure mechanism is reported as pure (eps, 0), never as the PLD's discretised (eps', delta)."""

import dp_accounting
import pytest

from dprec.privacy.events import (
    BitFlipDpEvent,
    EventLog,
    LocalReportDpEvent,
    ShuffledReportDpEvent,
)
from dprec.privacy.levels import account


@pytest.mark.parametrize(
    ("event", "eps"),
    [
        (LocalReportDpEvent(1.0), 1.0),
        (dp_accounting.LaplaceDpEvent(0.5), 2.0),
        (BitFlipDpEvent(0.7310585786300049, 0.2689414213699951), 1.0),
    ],
)
def test_a_single_pure_event_is_reported_as_pure(event, eps):
    log = EventLog()
    log.record(0, event, [0, 1, 2])
    levels = account(log, 1e-6)
    for g in (levels.event, levels.user):
        assert (g.epsilon, g.delta) == (pytest.approx(eps, rel=1e-12), 0.0)
        assert g.to_json()["epsilon"] == eps
    assert "single pure event" in levels.user.notes[0]


def test_one_bit_of_a_dplcf_vector_is_pure_at_event_level_only():
    log = EventLog()
    log.record(0, BitFlipDpEvent(0.7310585786300049, 0.2689414213699951), [0, 1], count=30,
               unit="interaction")
    levels = account(log, 1e-6)
    assert (levels.event.epsilon, levels.event.delta) == (pytest.approx(1.0), 0.0)
    assert levels.user.delta == 1e-6 and levels.user.epsilon < 30


def test_a_composition_keeps_the_tighter_pld_bound():
    log = EventLog()
    log.record(0, LocalReportDpEvent(1.0), [0], count=3)
    levels = account(log, 1e-6)
    assert levels.user.delta == 1e-6 and levels.user.epsilon < 3.0


def test_a_single_shuffled_report_keeps_its_amplification():
    log = EventLog()
    log.record(0, ShuffledReportDpEvent(2.0, 1000), range(1000))
    levels = account(log, 1e-6)
    assert levels.user.delta == 1e-6 and levels.user.epsilon < 1.0
