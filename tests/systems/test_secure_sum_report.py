"""The one report builder of the systems on the secure sum (dp-pop, dpals, dp-fedavg):
``systems.reporting.secure_sum_report``."""

from __future__ import annotations

import dp_accounting
import numpy as np
import pytest

from dprec.errors import DprecError
from dprec.privacy.adjacency import Adjacency
from dprec.privacy.events import EventLog
from dprec.privacy.rdp_accountant import RdpAccountant
from dprec.systems.reporting import secure_sum_report


def _report(aggregation: str, calls: list[int]):
    log = EventLog(4)
    log.record(0, dp_accounting.GaussianDpEvent(3.0), np.arange(4))

    def params() -> dict[str, object]:
        calls.append(1)
        return {"q": 1024}

    return secure_sum_report(
        "sys", aggregation=aggregation, epsilon=2.0, delta=1e-6, log=log,
        threat_models=("secure words", "trusted words"), mechanisms=({"name": "skellam"},),
        contribution_bound="a bound", details={"steps": 3},
        assumptions={"min_honest": 4, "server_proxy_collusion": False},
        secure_sum=params, accountant=RdpAccountant(Adjacency.ZERO_OUT))


def test_a_secure_report_states_the_secure_sum_and_its_assumptions():
    calls: list[int] = []
    report = _report("secure", calls)
    assert report.threat_model == "secure words" and calls == [1]
    assert (report.claimed.epsilon, report.claimed.delta, report.claimed.model) == \
        (2.0, 1e-6, "secure-sum")
    assert list(report.extra) == ["levels", "adjacency", "events", "model",
                                  "contribution_bound", "steps", "threat_model_assumptions",
                                  "secure_sum"]
    assert report.extra["threat_model_assumptions"] == {"min_honest": 4,
                                                        "server_proxy_collusion": False}
    assert report.extra["secure_sum"] == {"q": 1024}
    assert 0 < report.extra["levels"]["user"]["epsilon"] < 2.0


def test_a_trusted_report_names_the_curator_and_no_secure_sum():
    calls: list[int] = []
    report = _report("trusted", calls)
    assert report.threat_model == "trusted words" and calls == []
    assert report.claimed.model == "central" and report.extra["model"] == "central"
    assert report.extra["threat_model_assumptions"] == {"trusted_curator": True}
    assert "secure_sum" not in report.extra


def test_an_unknown_aggregation_is_refused():
    with pytest.raises(DprecError, match="secure or trusted"):
        _report("shuffled", [])
