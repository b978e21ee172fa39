"""Suite-wide: under pytest-xdist (``make test`` runs ``-n auto --dist loadgroup``), the tests
that share an expensive module-scoped fixture run on one worker, so it starts once.

xdist's own ``loadgroup`` reads ``@pytest.mark.xdist_group`` by renaming node ids, which
pytest 9.2 no longer lets it do: the marks are silently ignored and every test is spread
(pytest-dev/pytest-xdist#1386). So ``--dist loadgroup`` here uses a scheduler that groups
by node id, from :data:`SHARED`; every other test is sent alone.
"""

from __future__ import annotations

from typing import Any

import pytest

ALL = ()
"""Every test of the module."""

SHARED: dict[str, tuple[str, ...]] = {
    # a server and a proxy as processes (fixture ``running``)
    "tests/services/test_processes.py": (
        "test_a_running_proxy_states_the_threshold_the_report_uses",
        "test_the_committed_openapi_documents_are_the_running_apps",
        "test_the_proxy_keeps_no_token_or_client_id_in_its_store_or_logs",
    ),
    "tests/services/test_connection_limits.py": ALL,  # a server process (``service``)
    "tests/distributed/test_ray_backend.py": ALL,  # a local Ray cluster (``local_ray``)
    "tests/protocol/test_sum_poisoning.py": ALL,  # two Skellam calibrations, ~1 s each
}
"""Module path -> the test functions that share its module-scoped fixture (``ALL``: every
test), each module's listed tests one group."""


def shared_group(nodeid: str) -> str | None:
    """The group of the test ``nodeid`` (its module path), or None when it goes alone."""
    module, _, rest = nodeid.partition("::")
    tests = SHARED.get(module)
    if tests is None:
        return None
    function = rest.split("::")[-1].split("[")[0]
    return module if tests == ALL or function in tests else None


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under ``--dist loadgroup``: xdist's ``loadscope`` with one scope per :data:`SHARED`
    group and one per other test (the largest scopes are sent first)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SharedFixtures(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return shared_group(nodeid) or nodeid

    return SharedFixtures(config, log)
