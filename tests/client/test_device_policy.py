"""The device policy: the user's own limits, checked at their exact boundaries, loaded from
TOML/JSON with safe defaults, and never accepting a mechanism without noise."""

import json
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "services"))
from svc import dplcf_info, fmf_info  # noqa: E402

from dprec.client import BadReply, DevicePolicy, PolicyViolation  # noqa: E402
from dprec.errors import DprecError  # noqa: E402
from dprec.mechanisms.bitflip import BitFlip  # noqa: E402
from dprec.systems.deployable import ProtocolInfo  # noqa: E402

DEFAULT = DevicePolicy()


def _cost(info: ProtocolInfo, policy: DevicePolicy = DEFAULT) -> float:
    return policy.cost(policy.read(info))


def test_costs_are_count_times_the_per_value_epsilon():
    assert _cost(dplcf_info(n_items=20, epsilon=1.0)) == 20.0  # SP: N bits x eps
    oue = BitFlip.oue(1.0)
    assert oue.eps_presence > oue.eps_absence
    assert _cost(dplcf_info(n_items=20, flip="oue", epsilon=1.0)) == pytest.approx(
        20 * oue.eps_presence, rel=1e-12)  # the worst pair differs in all 20 bits
    assert _cost(fmf_info(k=10, epsilon=2.5)) == 25.0  # k reports x eps
    assert _cost(fmf_info(k=10, epsilon=2.5, mechanism="piecewise")) == 25.0


@pytest.mark.parametrize("info", [dplcf_info(flip="none"), fmf_info(mechanism="none")])
def test_no_mechanism_is_refused_and_cannot_be_allowed(info):
    with pytest.raises(PolicyViolation, match="'none'.*none uploads the raw data"):
        _cost(info)
    with pytest.raises(DprecError, match="'none' refused"):
        DevicePolicy(mechanisms={"dplcf": ["symmetric", "none"]})


def test_the_one_sided_flip_only_when_named_and_a_family_left_out_is_refused():
    ap = dplcf_info(n_items=20, flip="asymmetric", epsilon=1.0)
    with pytest.raises(PolicyViolation, match="accepts oue, symmetric for dplcf"):
        _cost(ap)
    named = DevicePolicy(mechanisms={"dplcf": ["asymmetric"]})
    assert _cost(ap, named) == 20.0  # presence side, as the simulation's ledger
    with pytest.raises(PolicyViolation, match="accepts nothing for fmf"):
        _cost(fmf_info(), named)


def test_epsilon_limits_at_their_exact_boundary():
    assert _cost(fmf_info(k=4, epsilon=5.0)) == 20.0
    with pytest.raises(PolicyViolation, match="costs epsilon 5.0001, more than .* = 5"):
        _cost(fmf_info(k=4, epsilon=5.0001))
    per_round = DevicePolicy(max_epsilon_per_round=20.0)
    assert _cost(fmf_info(k=4, epsilon=5.0), per_round) == 20.0
    with pytest.raises(PolicyViolation, match="4 values\\) costs epsilon 20.0004"):
        _cost(fmf_info(k=4, epsilon=5.0001), DevicePolicy(max_epsilon_per_report=6,
                                                          max_epsilon_per_round=20.0))


def test_size_limits_at_their_exact_boundary():
    assert DEFAULT.read(fmf_info(k=1000)).k == 1000
    with pytest.raises(PolicyViolation, match="config.k = 1001 .* max_k = 1000"):
        DEFAULT.read(fmf_info(k=1001))
    assert DEFAULT.read(fmf_info(factors=64)).factors == 64
    with pytest.raises(PolicyViolation, match="max_factors = 64"):
        DEFAULT.read(fmf_info(factors=65))
    small = DevicePolicy(max_items=50)
    assert small.read(dplcf_info(n_items=50)).n_items == 50
    with pytest.raises(PolicyViolation, match="n_items = 51, more than .* max_items = 50"):
        small.read(dplcf_info(n_items=51))
    terms = DEFAULT.read(dplcf_info(n_items=8000))
    assert terms.message_bytes == 6 + 8 + 1000
    with pytest.raises(PolicyViolation, match="sends 1014 bytes, more than .* = 1013"):
        DevicePolicy(max_message_bytes=1013).read(dplcf_info(n_items=8000))
    # the user neighbourhood downloads the N x N matrix: 4 N^2 bytes
    full = DEFAULT.read(dplcf_info(n_items=4000, neighbourhood="user"))
    assert full.artefact_bytes == 15 + 8 * 4000 * 3 + 4 * 4000**2
    with pytest.raises(PolicyViolation, match="max_artefact_bytes"):
        DEFAULT.read(dplcf_info(n_items=4100, neighbourhood="user"))


def test_a_wire_k_larger_than_the_catalogue_is_n_minus_one():
    assert DEFAULT.read(dplcf_info(n_items=3, neighbours=20)).artefact_bytes == 15 + 8 * 3 * 2


def test_load_toml_and_json_closed_and_strict(tmp_path):
    toml = tmp_path / "policy.toml"
    toml.write_text('max_epsilon_per_report = 2.0\nmax_k = 50\n\n[mechanisms]\nfmf = ["binary"]\n')
    p = DevicePolicy.load(toml)
    assert (p.max_epsilon_per_report, p.max_k, dict(p.mechanisms)) == (
        2.0, 50, {"fmf": frozenset({"binary"})})
    assert p.max_epsilon_per_round == math.inf and p.max_items == DEFAULT.max_items
    doc = p.to_dict()
    assert json.loads(json.dumps(doc, allow_nan=False)) == doc
    js = tmp_path / "policy.json"
    js.write_text(json.dumps(doc))
    assert DevicePolicy.load(js) == p
    js.write_text('{"max_epsilon_per_report": NaN}')
    with pytest.raises(DprecError, match="strict JSON"):
        DevicePolicy.load(js)
    js.write_text('{"max_epsilon": 1}')
    with pytest.raises(DprecError, match="unknown device policy field"):
        DevicePolicy.load(js)
    for bad in ({"max_k": True}, {"max_k": 0}, {"max_epsilon_per_report": math.inf},
                {"max_factors": 256}, {"mechanisms": {"dp": ["x"]}},
                {"mechanisms": {"fmf": "binary"}}):
        with pytest.raises(DprecError):
            DevicePolicy.from_dict(bad)


@pytest.mark.parametrize("change, match", [
    ({"clip": -1.0}, "clip must be"), ({"epochs": True}, "config.epochs must be an integer"),
    ({"cells": "mine"}, "config.cells must be 'chosen' or 'assigned'"),
    ({"shuffle": 1}, "does not have: shuffle")])
def test_a_malformed_config_is_a_bad_reply_not_a_policy_matter(change, match):
    """The device decodes the published config into FMF-LDP's typed config: a field of the
    wrong type or range, or one the config does not have, is a bad reply."""
    from dprec.client.http import ServerAPI

    doc = fmf_info().to_json()
    doc["config"] = {**doc["config"], **change}
    api = ServerAPI.__new__(ServerAPI)
    api.protocol_doc = lambda: doc  # type: ignore[method-assign]
    with pytest.raises(BadReply, match=match):
        api.protocol()
