"""Fixtures of the services' tests (helpers live in svc.py)."""

import pytest
from svc import Stack, dplcf_info, fmf_info


@pytest.fixture
def fmf_stack(tmp_path):
    with Stack(tmp_path, fmf_info(), threshold=3, batch_senders=3) as s:
        yield s


@pytest.fixture
def dplcf_stack(tmp_path):
    with Stack(tmp_path, dplcf_info(), threshold=3, batch_senders=3) as s:
        yield s
