"""Suite-wide: under pytest-xdist (``make test`` runs ``-n auto --dist loadgroup``), the tests
that share an expensive module-scoped fixture run on one worker, so it starts once.

xdist's own ``loadgroup`` reads ``@pytest.mark.xdist_group`` by renaming node ids, which
pytest 9.2 no longer lets it do: the marks are silently ignored and every test is spread
(pytest-dev/pytest-xdist#1386). So ``--dist loadgroup`` here uses a scheduler that groups
by node id, from ``shared_fixtures.SHARED``; every other test is sent alone.
"""

from __future__ import annotations

from typing import Any

import pytest
from shared_fixtures import shared_group


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under ``--dist loadgroup``: xdist's ``loadscope`` with one scope per ``SHARED``
    group and one per other test (the largest scopes are sent first)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SharedFixtures(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return shared_group(nodeid) or nodeid

    return SharedFixtures(config, log)
