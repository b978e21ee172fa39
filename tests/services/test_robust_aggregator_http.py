"""FMF-LDP with a robust aggregator as real services on loopback (issue 26 §3): the HTTP run
gives the in-process model bit for bit, whatever batches the proxy forwards, since the
robust estimates are functions of the multiset of reports."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from dprec.data.synthetic import synthetic
from dprec.protocol.engine import ShufflingProxy
from dprec.random import derive_generator
from dprec.services.launch import Loopback, LoopbackTransport
from dprec.systems.fmf import system as fmf_system
from dprec.systems.registry import make_system

PARAMS = {"epochs": "2", "k": "20", "shuffle_threshold": "50"}


def _fit(params: dict[str, str], train, transport=None):
    model = make_system("fmf-ldp", params)
    model.transport = transport
    return model.fit(train, derive_generator(7, "system", "fmf-ldp"))


@pytest.mark.slow
@pytest.mark.parametrize("aggregator", ["trimmed:0.2", "median-of-means:5"])
def test_http_gives_the_in_process_robust_model_bit_for_bit(tmp_path, aggregator,
                                                            monkeypatch):
    train = synthetic(300, 120, 6000, rng=0).binary()
    params = {**PARAMS, "aggregator": aggregator}
    plain = _fit(PARAMS, train)
    one_batch = _fit(params, train)
    monkeypatch.setattr(fmf_system, "ShufflingProxy",
                        functools.partial(ShufflingProxy, batch_senders=100))
    here = _fit(params, train)
    with Loopback(tmp_path) as lb:
        net = LoopbackTransport(lb, "fmf-ldp", params, batch_senders=100)
        try:
            there = _fit(params, train, net)
        finally:
            net.close()
    assert not np.array_equal(plain.V, here.V)
    np.testing.assert_array_equal(here.V, there.V)
    np.testing.assert_array_equal(one_batch.V, there.V)  # three batches of 100 or one of 300
    assert here.privacy_report().to_json() == there.privacy_report().to_json()
