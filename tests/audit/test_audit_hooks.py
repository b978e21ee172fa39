"""A system is audited through the hook on its spec (issue 32 §3): the auditor knows no
system by name, and the systems that declare a hook are exactly the eleven the auditor once
listed by name."""

import pytest

from dprec.audit import auditable_systems, targets
from dprec.audit.api import run_subject
from dprec.audit.mechanisms import AuditSettings
from dprec.errors import DprecError
from dprec.systems.audits import AuditRequest, LocalValue
from dprec.systems.registry import SYSTEMS


def test_the_hooks_name_the_same_systems_as_before():
    assert set(auditable_systems()) == {
        "dplcf-sp", "dplcf-ap", "dplcf-oue", "dplcf-eb", "lcf-sp", "lcf-ap", "fmf-ldp",
        "laplace-svd", "laplace-rr-svd", "ldp-svd", "dp-privrec"}
    assert "dp-privrec-canaries" in targets() and "skellam-run" in targets()


def test_a_hook_decides_the_level_and_its_settings():
    hook = SYSTEMS["dplcf-oue"].audit
    assert hook is not None and hook.settings == ("n_items",)
    spec = SYSTEMS["dplcf-oue"]
    request = AuditRequest("dplcf-oue", None, 1.0, {}, lambda d: spec.default_config())
    subject = hook.subject(request)
    assert isinstance(subject, LocalValue) and subject.label == "dplcf-oue"
    with pytest.raises(DprecError, match="--param n_items must be an integer"):
        AuditRequest("x", None, None, {"n_items": "many"}, dict).integer("n_items", 1)


def test_a_mechanism_without_an_event_audit_is_refused():
    with pytest.raises(DprecError, match="no event-level audit of the object mechanism"):
        run_subject(LocalValue(object()), AuditSettings(trials=10))
