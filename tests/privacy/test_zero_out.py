"""Zero-out adjacency (Kairouz, Liu, Steinke 2021; dp-accounting's REPLACE_SPECIAL): the
relation of a secure sum with distributed noise. Additive-noise events give the same numbers
as under add/remove; local reports and fixed-size batches are refused."""

from __future__ import annotations

import math

import dp_accounting
import pytest

from dprec.privacy.accountant import UnsupportedEventError
from dprec.privacy.adjacency import Adjacency
from dprec.privacy.events import (
    BitFlipDpEvent,
    EventLog,
    LocalReportDpEvent,
    ShuffledReportDpEvent,
)
from dprec.privacy.levels import account
from dprec.privacy.pld_accountant import PldAccountant
from dprec.privacy.rdp_accountant import RdpAccountant
from dprec.privacy.skellam import SkellamDpEvent

ZERO, ADD = Adjacency.ZERO_OUT, Adjacency.ADD_REMOVE_ONE
GAUSS = dp_accounting.GaussianDpEvent(1.5)


def test_zero_out_is_dp_accountings_replace_special():
    assert ZERO.to_dp_accounting() is dp_accounting.NeighboringRelation.REPLACE_SPECIAL
    assert ZERO.describe() == "zero-out adjacency"
    assert Adjacency("zero_out") is ZERO
    assert PldAccountant(adjacency=ZERO).adjacency is ZERO
    assert RdpAccountant(ZERO).adjacency is ZERO


NOISE_EVENTS = [
    [(SkellamDpEvent.k_hot(40.0, 10), 1)],
    [(SkellamDpEvent.k_hot(400.0, 50), 2)],
    [(SkellamDpEvent(900.0, 30.0, math.sqrt(30.0)), 3)],  # the RDP bound (no unit_shifts)
    [(GAUSS, 4)],
    [(dp_accounting.LaplaceDpEvent(2.0), 3)],
    [(SkellamDpEvent.k_hot(40.0, 10), 1), (GAUSS, 1)],
]


@pytest.mark.parametrize("events", NOISE_EVENTS)
def test_additive_noise_has_the_same_epsilon_as_under_add_remove(events):
    zero = PldAccountant(adjacency=ZERO).compose(events, 1e-6)
    add = PldAccountant(adjacency=ADD).compose(events, 1e-6)
    assert zero.epsilon == add.epsilon and 0 < zero.epsilon < math.inf


@pytest.mark.parametrize("events", [e for e in NOISE_EVENTS
                                    if not any(isinstance(x, dp_accounting.LaplaceDpEvent)
                                               for x, _ in e)])
def test_rdp_gives_the_same_epsilon_as_under_add_remove(events):
    assert RdpAccountant(ZERO).compose(events, 1e-6).epsilon == \
        RdpAccountant(ADD).compose(events, 1e-6).epsilon


def test_poisson_sampled_gaussian_is_accounted_and_fixed_batches_are_refused():
    poisson = dp_accounting.PoissonSampledDpEvent(0.05, GAUSS)
    fixed = dp_accounting.SampledWithoutReplacementDpEvent(1000, 50, GAUSS)
    zero = RdpAccountant(ZERO)
    assert zero.supports(poisson) and not zero.supports(fixed)
    got = zero.compose([(poisson, 20)], 1e-6)
    assert got.epsilon == RdpAccountant(ADD).compose([(poisson, 20)], 1e-6).epsilon
    assert "zero_out adjacency" in got.notes[0]
    with pytest.raises(UnsupportedEventError, match="rdp accountant supports"):
        zero.compose([(fixed, 1)], 1e-6)


LOCAL_REPORTS = [BitFlipDpEvent(0.75, 0.25), BitFlipDpEvent(1.0, 0.2), LocalReportDpEvent(1.0),
                 ShuffledReportDpEvent(2.0, 1000),
                 dp_accounting.RandomizedResponseDpEvent(0.5, 4)]


@pytest.mark.parametrize("event", LOCAL_REPORTS)
def test_local_reports_are_refused_under_zero_out(event):
    acc = PldAccountant(adjacency=ZERO)
    assert not acc.supports(event)
    assert PldAccountant().supports(event)  # replace-one accounts them
    with pytest.raises(UnsupportedEventError, match="pld accountant supports"):
        acc.compose([(event, 1)], 1e-6)
    log = EventLog(3)
    log.record(0, event, [0, 1])
    with pytest.raises(UnsupportedEventError):
        account(log, 1e-6, acc)


def test_a_log_of_skellam_sums_gives_the_same_levels_under_both_relations():
    log = EventLog(5)
    log.record(0, SkellamDpEvent.k_hot(60.0, 8), range(5), unit="user")
    log.record(1, SkellamDpEvent.k_hot(60.0, 8), [0, 1], unit="user")
    zero = account(log, 1e-6, PldAccountant(adjacency=ZERO))
    add = account(log, 1e-6, PldAccountant(adjacency=ADD))
    assert zero.user.epsilon == add.user.epsilon and zero.event.epsilon == add.event.epsilon
    assert any("zero-out adjacency" in n for n in zero.user.notes)
