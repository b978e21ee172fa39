"""The tests that share an expensive module-scoped fixture, which ``make test`` runs on one
pytest-xdist worker (tests/conftest.py's scheduler), so that the fixture starts once."""

from __future__ import annotations

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
