"""Audits whose trials cannot fit in memory are refused before any output is drawn."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from dprec.audit import AuditSettings, audit
from dprec.audit.distinguisher import BYTES_PER_TRIAL, two_input_audit
from dprec.errors import DprecError

synthetic_module = importlib.import_module("dprec.data.synthetic")


@pytest.mark.parametrize("trials", [10**9, 10**12])
def test_too_many_trials_are_refused_before_sampling(trials, monkeypatch):
    monkeypatch.setattr(synthetic_module, "machine_memory", lambda: 16 << 30)

    def sample(x, n, rng):
        pytest.fail("sampling started")

    with pytest.raises(DprecError, match=rf"{trials:,} trials per input .* needs about "
                                         r"[\d,.]+ GiB of memory, this machine has 16\.0 GiB; "
                                         "pass fewer --trials"):
        two_input_audit(sample, trials, 0.01, 0.0, np.random.default_rng(0))


def test_the_cli_path_refuses_too(monkeypatch):
    monkeypatch.setattr(synthetic_module, "machine_memory", lambda: 16 << 30)
    with pytest.raises(DprecError, match="pass fewer --trials"):
        audit("bitflip-sp", settings=AuditSettings(trials=10**9))


def test_what_fits_still_runs(monkeypatch):
    monkeypatch.setattr(synthetic_module, "machine_memory",
                        lambda: BYTES_PER_TRIAL * 20_000 + 1)
    assert audit("laplace", settings=AuditSettings(trials=20_000)).trials == 20_000
