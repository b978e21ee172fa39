"""The TypeScript SDK's dp-pop uploads (clients/js/fixtures/ts/dp_pop_upload*.json, written
by clients/js/test/dp_pop_upload.test.ts from fixed randomness and keys) verified by Python's
Leader (the server) and Helper (the proxy): the boxes open, the proofs are accepted, and the
output shares add up to a vector that is the history's k-hot row plus a truncated share. A
tampered TypeScript proof is rejected. Python's own Prio3 fixtures for the TS tests
(clients/js/fixtures/python/prio3_*.json) must be what scripts/write_prio3_fixtures.py
writes now."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from dprec.protocol.secure_sum.errors import InvalidProofError
from dprec.protocol.secure_sum.messages import run_id
from dprec.protocol.secure_sum.proved import ProvedUpload, bound_data
from dprec.protocol.secure_sum.sealed import KeyPair, open_box
from dprec.protocol.secure_sum.vdaf.contribution import DP_POP_ID, ContributionCheck
from dprec.protocol.secure_sum.vdaf.dprec_circuits import BoundedVector
from dprec.protocol.secure_sum.vdaf.noise_bounds import NoiseTruncation
from dprec.protocol.secure_sum.wire import SumUpload

ROOT = Path(__file__).resolve().parents[3]
TS = ROOT / "clients" / "js" / "fixtures" / "ts"
PY = ROOT / "clients" / "js" / "fixtures" / "python"
VERIFY_KEY = bytes(range(100, 132))
TS_FILES = ("dp_pop_upload.json", "dp_pop_upload_1682.json")


def _check(fx: dict) -> ContributionCheck:
    """dp-pop's check of the fixture's round terms (dimension, T, S, B2, k; as
    :func:`~dprec.protocol.secure_sum.vdaf.contribution.dp_pop_check` builds it)."""
    r = fx["round"]
    t, d = r["terms"], r["n_items"]
    circuit = BoundedVector(d, -t["T"], 1 + t["T"], sum_range=(-t["S"], t["k"] + t["S"]),
                            l2_bound_sq=t["B2"])
    truncation = NoiseTruncation(r["mu_share"], d, 1, t["T"], t["S"], 0.0)
    check = ContributionCheck(circuit, DP_POP_ID, "dp-pop", truncation=truncation)
    assert check.proofs == t["proofs"]
    return check


def _open(fx: dict):
    """(check, upload, leader share, helper share, run) of a TS fixture."""
    check = _check(fx)
    proxy = KeyPair.from_raw(bytes.fromhex(fx["proxy_private"]))
    server = KeyPair.from_raw(bytes.fromhex(fx["server_private"]))
    assert proxy.public.hex() == fx["proxy_public"] and server.public.hex() == fx["server_public"]
    message = SumUpload.from_bytes(bytes.fromhex(fx["upload"]))
    up = ProvedUpload.from_bytes(message.data, check)
    run = run_id(proxy.public, server.public)
    pub = up.public_share
    helper = open_box(proxy, up.helper_box,
                      bound_data(run, up.round_id, up.message_id, "proxy", pub))
    leader = open_box(server, up.leader_box,
                      bound_data(run, up.round_id, up.message_id, "server", pub))
    return check, up, leader, helper


def _prepare(check, up, leader: bytes, helper: bytes) -> np.ndarray:
    """The integer vector the two aggregators agree on, or InvalidProofError."""
    s0, vs0 = check.prep_init(0, VERIFY_KEY, up.message_id, up.public_share, leader)
    s1, vs1 = check.prep_init(1, VERIFY_KEY, up.message_id, up.public_share, helper)
    message = check.prep_shares_to_prep(vs0, vs1)
    outs = [check.aggregate([check.prep_finish(s, message)]) for s in (s0, s1)]
    return check.unshard(outs, 1)


@pytest.mark.parametrize("name", TS_FILES)
def test_ts_prio3_upload_verifies_and_sums(name: str) -> None:
    fx = json.loads((TS / name).read_text())
    check, up, leader, helper = _open(fx)
    y = _prepare(check, up, leader, helper)
    assert np.array_equal(y, np.asarray(fx["y"], np.int64))  # the sum is the TS vector
    t, d = fx["round"]["terms"], fx["round"]["n_items"]
    items = np.asarray(fx["history"])
    others = np.setdiff1d(np.arange(d), items)
    assert np.abs(y[others]).max() <= t["T"]  # noise only where the user has no item
    assert abs(int(y.sum()) - t["k"]) <= t["S"]  # k ones (more than k items) plus the share
    assert int(y @ y) <= t["B2"]
    assert -t["T"] <= y.min() and y.max() <= 1 + t["T"]


@pytest.mark.parametrize("name", TS_FILES[:1])
def test_tampered_ts_proof_is_rejected(name: str) -> None:
    fx = json.loads((TS / name).read_text())
    check, up, leader, helper = _open(fx)
    meas_bytes = 8 * check.vdaf.flp.MEAS_LEN
    for at in (meas_bytes, meas_bytes + 8 * 5, len(leader) - 32 - 8):  # a proof element
        word = int.from_bytes(leader[at:at + 8], "little")
        bad = leader[:at] + ((word + 1) % check.vdaf.field.MODULUS).to_bytes(8, "little") \
            + leader[at + 8:]
        with pytest.raises(InvalidProofError):
            _prepare(check, up, bad, helper)
    assert _prepare(check, up, leader, helper).shape == (check.circuit.dimension,)


def test_python_prio3_fixtures_are_current() -> None:
    spec = importlib.util.spec_from_file_location(
        "write_prio3_fixtures", ROOT / "scripts" / "write_prio3_fixtures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, data in module.fixtures().items():
        assert (PY / name).read_text() == module.render(data), \
            f"{name} is stale: rerun scripts/write_prio3_fixtures.py"
