"""The neighbouring relation is an object on the accountants, never a string."""

import dp_accounting
import pytest

from dprec.errors import DprecError
from dprec.privacy.adjacency import Adjacency
from dprec.privacy.basic_accountant import BasicAccountant
from dprec.privacy.events import EventLog, LocalReportDpEvent
from dprec.privacy.pld_accountant import PldAccountant
from dprec.privacy.rdp_accountant import RdpAccountant
from dprec.systems.reporting import privacy_report_from_log


@pytest.mark.parametrize("value", ["replace_one", "add_remove_one", None, 1])
def test_rdp_accountant_refuses_a_string_relation(value):
    with pytest.raises(DprecError, match="Adjacency"):
        RdpAccountant(value)


def test_every_accountant_names_its_relation():
    assert RdpAccountant().adjacency is Adjacency.REPLACE_ONE
    assert RdpAccountant(Adjacency.ADD_REMOVE_ONE).adjacency is Adjacency.ADD_REMOVE_ONE
    assert PldAccountant().adjacency is Adjacency.REPLACE_ONE
    assert BasicAccountant().adjacency is Adjacency.REPLACE_ONE


def test_relation_maps_to_dp_accounting_and_decides_support():
    nr = dp_accounting.NeighboringRelation
    assert Adjacency.REPLACE_ONE.to_dp_accounting() is nr.REPLACE_ONE
    assert Adjacency.ADD_REMOVE_ONE.to_dp_accounting() is nr.ADD_OR_REMOVE_ONE
    g = dp_accounting.GaussianDpEvent(1.0)
    fixed = dp_accounting.SampledWithoutReplacementDpEvent(100, 10, g)
    poisson = dp_accounting.PoissonSampledDpEvent(0.1, g)
    replace = RdpAccountant(Adjacency.REPLACE_ONE)
    add_remove = RdpAccountant(Adjacency.ADD_REMOVE_ONE)
    assert replace.supports(fixed) and not replace.supports(poisson)
    assert add_remove.supports(poisson) and not add_remove.supports(fixed)
    assert "add_remove_one adjacency" in add_remove.compose([(poisson, 5)], 1e-6).notes[0]


def test_a_report_states_the_accountants_relation():
    log = EventLog()
    log.record(0, LocalReportDpEvent(1.0), [0])
    rep = privacy_report_from_log("x", "t", log, None, ()).to_json()
    assert rep["adjacency"] == "replace_one"
    log = EventLog()
    log.record(0, dp_accounting.PoissonSampledDpEvent(0.1, dp_accounting.GaussianDpEvent(1.0)),
               [0])
    rep = privacy_report_from_log("x", "t", log, None, (), model="central",
                                  accountant=RdpAccountant(Adjacency.ADD_REMOVE_ONE)).to_json()
    assert rep["adjacency"] == "add_remove_one"
