"""FMF-LDP with a robust server aggregator (issue 26 §3): selected by ``aggregator=``, the
same privacy report and event log as the plain mean (post-processing), and refused where
only sums reach the server."""

import json

import numpy as np
import pytest

from dprec.data.synthetic import synthetic
from dprec.errors import DprecError
from dprec.mechanisms.numeric import BinaryMechanism
from dprec.privacy.events import strict_json
from dprec.protocol import aggregation
from dprec.protocol.aggregation import CellSums, MeanAggregator
from dprec.protocol.batches import ReportBatch
from dprec.protocol.engine import Clients
from dprec.protocol.poisoning import PoisonedClients, Poisoning, poison
from dprec.random import derive_generator
from dprec.systems.deployable import ProtocolInfo
from dprec.systems.fmf.attacks import ReportAttack
from dprec.systems.fmf.defences import FMF_AGGREGATORS
from dprec.systems.fmf.serve import SERVING
from dprec.systems.fmf.server import FactorServer
from dprec.systems.fmf.system import FMFConfig
from dprec.systems.params import param_pairs, system_params
from dprec.systems.registry import make_system

PARAMS = {"epochs": 3, "k": 20, "lr": 0.01, "shuffle_threshold": 50}


def make_aggregator(name):
    return aggregation.make_aggregator(name, FMF_AGGREGATORS)


@pytest.fixture(scope="module")
def train():
    return synthetic(200, 60, 5000, rng=0).binary()


def _fit(train, aggregator: str, cells: str = "chosen"):
    model = make_system("fmf-ldp", {**PARAMS, "aggregator": aggregator, "cells": cells})
    return model.fit(train, derive_generator(7, "system", "fmf-ldp"))


@pytest.mark.parametrize("cells", ["chosen", "assigned"])
def test_privacy_report_and_events_are_those_of_the_plain_mean(train, cells):
    plain = _fit(train, "mean", cells)
    dump = json.dumps(strict_json(plain.privacy_report().to_json()), sort_keys=True)
    for spec in ("trimmed:0.2", "median-of-means:5"):
        robust = _fit(train, spec, cells)
        assert not np.array_equal(robust.V, plain.V)  # the aggregator did act
        assert json.dumps(strict_json(robust.privacy_report().to_json()),
                          sort_keys=True) == dump
        assert robust.events.to_json() == plain.events.to_json()


def test_no_trim_gives_the_plain_mean_model_bit_for_bit(train):
    np.testing.assert_array_equal(_fit(train, "trimmed:0").V, _fit(train, "mean").V)


def test_the_aggregator_is_a_parameter():
    params = system_params("fmf-ldp", None, param_pairs(["aggregator=median-of-means:7"]))
    model = make_system("fmf-ldp", params)
    assert model.config.aggregator == "median-of-means:7"
    with pytest.raises(DprecError, match="aggregator must be one of"):
        FMFConfig(aggregator="median")
    with pytest.raises(DprecError, match="aggregator must be one of mean, trimmed"):
        FMFConfig(aggregator="dplcf-range")  # DPLCF's upload screens have no cell estimate


def test_sharded_sums_refuse_a_robust_aggregator():
    """A sharded run reduces CellSums, which only the plain mean can use."""
    sums = CellSums.of(np.array([0, 1]), np.array([0.5, -0.5]), 8)
    plain = FactorServer(4, 2, 0.1, 0.0, 1, 1.0, 0.1, None)
    plain.start(np.random.default_rng(0))
    assert plain.apply_sums(sums) is not None
    srv = FactorServer(4, 2, 0.1, 0.0, 1, 1.0, 0.1, None, make_aggregator("trimmed"))
    srv.start(np.random.default_rng(0))
    with pytest.raises(DprecError, match="needs every report of a round in one place"):
        srv.apply_sums(sums)


def test_the_services_server_uses_the_configs_aggregator():
    info = ProtocolInfo("fmf-ldp", 30, FMFConfig(aggregator="trimmed:0.2"))
    assert SERVING.server_role(info, MeanAggregator()).aggregator.spec == "trimmed:0.2"
    assert SERVING.server_role(info, make_aggregator("trimmed:0.2")).aggregator.spec == \
        "trimmed:0.2"
    plain = ProtocolInfo("fmf-ldp", 30, FMFConfig())
    assert SERVING.server_role(plain, make_aggregator("median-of-means:3")).aggregator.spec \
        == "median-of-means:3"
    with pytest.raises(DprecError, match="differ"):
        SERVING.server_role(info, make_aggregator("median-of-means"))


def test_serve_server_reads_the_aggregator_option():
    """``dprec serve server --aggregator median-of-means:3`` builds that aggregator; an
    unknown name is refused before anything starts."""
    from dprec.cli.serve import _protocol_info
    from dprec.services.roles import server_role

    info = _protocol_info("fmf-ldp", 30, None, None, None, None, None, "median-of-means:3")
    assert server_role(info, make_aggregator(info.aggregator)).aggregator.spec == \
        "median-of-means:3"
    with pytest.raises(DprecError, match="aggregator must be one of"):
        _protocol_info("fmf-ldp", 30, None, None, None, None, None, "median")


class _Round(Clients):
    """One fixed round of one-bit reports (all bits 0), 400 clients x 50 assigned cells."""

    def __init__(self) -> None:
        rng = np.random.default_rng(0)
        self.batch = ReportBatch(np.arange(400), rng.integers(0, 30, (400, 50)).astype(np.int32),
                                 rng.integers(0, 4, (400, 50)).astype(np.uint8),
                                 bits=np.zeros((400, 50), np.uint8))

    def step(self, broadcast, round, rng):
        yield self.batch

    def sent(self):
        return []


@pytest.mark.parametrize("false_inputs", [False, True])
def test_false_input_attackers_report_through_the_mechanism(false_inputs):
    """Attackers with false inputs send bit 1 with probability (1 + x'/C)/2 for their chosen
    sign x' (the plain attack: always the sign's bit); cells are kept either way."""
    c = BinaryMechanism(2.5).scale
    poisoning = Poisoning(0.5, "promote", fixed_cells=True, false_inputs=false_inputs,
                          value_bound=c if false_inputs else None)
    inner = _Round()
    attackers = np.arange(0, 400, 2)
    pc = PoisonedClients(inner, attackers, poisoning, np.random.default_rng(1), ReportAttack())
    (out,) = list(pc.step(np.ones((30, 4)), 0, np.random.default_rng(2)))
    np.testing.assert_array_equal(out.items, inner.batch.items)
    bad = out.bits[attackers].astype(bool)
    # honest bits all 0 (value -C): every factor's direction is -1, so the attack's sign is
    # -1 on a target item's cells and +1 elsewhere
    on_target = np.isin(out.items[attackers], pc.targets)
    sign = np.where(on_target, -1.0, 1.0)
    agree = np.mean(bad == (sign > 0))
    if false_inputs:
        assert abs(agree - 0.5 * (1 + 1 / c)) < 0.02  # 10,000 bits: 4 sigma is ~0.016
    else:
        assert agree == 1.0
    assert not out.bits[1::2].any()  # honest rows untouched


def test_false_inputs_take_their_scale_from_the_config():
    model = make_system("fmf-ldp", {**PARAMS, "cells": "assigned"})
    hook = poison(model, Poisoning(0.1, "promote", false_inputs=True), np.random.default_rng(0))
    assert hook.poisoning.value_bound == BinaryMechanism(2.5).scale
    assert hook.poisoning.fixed_cells
    pw = make_system("fmf-ldp", {**PARAMS, "mechanism": "piecewise"})
    with pytest.raises(DprecError, match="binary mechanism"):
        poison(pw, Poisoning(0.1, "promote", false_inputs=True), np.random.default_rng(0))
