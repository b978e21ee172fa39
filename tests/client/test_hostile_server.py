"""A lying server (a real process, liar.py) cannot spend a device's privacy, take its memory
or crash the SDK with anything but a DprecError that names what was wrong (issue 21 §1, §3,
§4)."""

import base64
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "services"))
from svc import dplcf_info, fmf_info  # noqa: E402

from dprec.client import (  # noqa: E402
    BadReply,
    DeviceClient,
    PolicyViolation,
    ServiceError,
)
from dprec.errors import DprecError  # noqa: E402
from dprec.protocol.messages import ItemMatrix  # noqa: E402
from dprec.systems.dplcf.messages import NeighbourLists  # noqa: E402

OPEN = {"json": {"started": True, "finished": False, "round": 0}}
ACCEPT = {"status": 202, "json": {"accepted": True}}
MB = 1 << 20


def _device(liar, tmp_path, budget=1e9):
    return DeviceClient(42, "token", liar.url, liar.url, tmp_path / "device", budget)


def _history(n_items, items=(3, 7, 11)):
    h = np.zeros((1, n_items))
    h[0, list(items)] = 1
    return h


def _doc(info, **config):
    doc = info.to_json()
    doc["config"] = {**doc["config"], **config}
    return doc


def _artefact(body: bytes, **headers: str) -> dict:
    return {"b64": base64.b64encode(body).decode(),
            "headers": {"ETag": '"a.v1"', "X-Dprec-Version": "1", **headers}}


@pytest.mark.parametrize("system, config", [
    ("dplcf", {"flip": "none"}),          # lcf-ub, or a lie about dplcf-sp
    ("fmf", {"mechanism": "none"}),       # FMF without noise
    ("dplcf", {"flip": "asymmetric"}),    # one-sided: absence unprotected, not by default
    ("dplcf", {"epsilon": 20.0}),         # more than max_epsilon_per_report = 5
    ("fmf", {"epsilon": 40.0}),
])
def test_a_device_refuses_a_mechanism_its_policy_does_not_accept(liar, tmp_path, system,
                                                                 config):
    info = dplcf_info(n_items=20) if system == "dplcf" else fmf_info(n_items=20, k=4)
    liar.serve({"GET /v1/protocol": {"json": _doc(info, **config)}, "GET /v1/round": OPEN,
                "POST /v1/rounds/0/reports": ACCEPT})
    d = _device(liar, tmp_path)
    with pytest.raises(PolicyViolation, match="device policy"):
        d.report(_history(20))
    # refused before a byte was computed: nothing sent, nothing fetched, nothing charged
    assert liar.requests("POST") == [] and liar.requests(prefix="/v1/artefacts") == []
    assert d.ledger.spent == 0.0 and not list((tmp_path / "device" / "sent").iterdir())


@pytest.mark.parametrize("k, refusal, match", [
    (5_000, PolicyViolation, "config.k = 5000 is more than the device policy's max_k = 1000"),
    (200_000_000, BadReply, "k must be <= 65536"),  # FMFConfig's own bound, when decoded
    (10**12, BadReply, "k must be <= 65536")])
def test_a_huge_k_is_refused_before_any_work(liar, tmp_path, k, refusal, match):
    liar.serve({"GET /v1/protocol": {"json": _doc(fmf_info(n_items=50), k=k)},
                "GET /v1/round": OPEN, "POST /v1/rounds/0/reports": ACCEPT})
    d = _device(liar, tmp_path)
    start = time.monotonic()
    with pytest.raises(refusal, match=match):
        d.report(_history(50))
    assert time.monotonic() - start < 5
    assert liar.requests("POST") == [] and liar.requests(prefix="/v1/artefacts") == []


@pytest.mark.parametrize("declared", [1_500_000_000, None])
def test_an_oversized_artefact_is_refused_without_reading_it(liar, tmp_path, declared):
    info = fmf_info(n_items=30, factors=3)
    expected = ItemMatrix.serialized_size(30, 3)
    liar.serve({"GET /v1/protocol": {"json": info.to_json()},
                "GET /v1/artefacts/item-matrix": {
                    "declared": declared, "send": 256 * MB,
                    "headers": {"ETag": '"a.v1"', "X-Dprec-Version": "1"}}})
    d = _device(liar, tmp_path)
    start = time.monotonic()
    match = (f"declares 1500000000 bytes, but a 30 x 3 item matrix is {expected} bytes"
             if declared else f"larger than the {expected} bytes")
    with pytest.raises(BadReply, match=match):
        d.recommend(_history(30))
    assert time.monotonic() - start < 10
    (got,) = liar.wait_for("/v1/artefacts")
    # the device hung up at once: the liar could write no more than the socket buffers took
    assert got["written"] < 32 * MB


def test_a_huge_json_reply_is_refused_before_reading_it(liar, tmp_path):
    liar.serve({"GET /v1/protocol": {"declared": 1_500_000_000, "send": 256 * MB}})
    with pytest.raises(BadReply, match="declares 1500000000 bytes, more than the 8388608"):
        _device(liar, tmp_path).report(_history(20))
    assert liar.wait_for("/v1/protocol")[0]["written"] < 32 * MB


def test_an_artefact_of_the_wrong_shape_is_refused_by_its_declared_size(liar, tmp_path):
    # K = 0 lists (a ZeroDivisionError in scoring before) do not have the size N, K imply
    empty = NeighbourLists(np.zeros((20, 0), np.int32), np.zeros((20, 0), np.float32))
    liar.serve({"GET /v1/protocol": {"json": dplcf_info(n_items=20, neighbours=3).to_json()},
                "GET /v1/artefacts/neighbours": _artefact(empty.to_bytes())})
    with pytest.raises(BadReply, match="20 neighbour lists of 3 is 495 bytes"):
        _device(liar, tmp_path).recommend(_history(20))


DPLCF = dplcf_info(n_items=20, neighbours=3)
FMF = fmf_info(n_items=20, k=4, factors=3)
LISTS = NeighbourLists(np.tile(np.arange(1, 4, dtype=np.int32), (20, 1)),
                       np.ones((20, 3), np.float32)).to_bytes()
V = ItemMatrix(np.full((20, 3), 0.1, np.float32)).to_bytes()


def _report_to(protocol, round_=OPEN, submit=ACCEPT, artefacts=None):
    routes = {"GET /v1/protocol": protocol, "GET /v1/round": round_,
              "POST /v1/rounds/0/reports": submit}
    return {**routes, **(artefacts or {})}


HOSTILE = {
    "protocol not JSON": (_report_to({"text": "<html>"}), "/v1/protocol: the reply is not JSON"),
    "protocol a list": (_report_to({"json": [1]}), "must be a JSON object"),
    "round without fields": (_report_to({"json": DPLCF.to_json()}, {"json": {}}),
                             "booleans started and finished"),
    "round not JSON": (_report_to({"json": DPLCF.to_json()}, {"text": "x"}),
                       "/v1/round: the reply is not JSON"),
    "round out of range": (_report_to({"json": DPLCF.to_json()}, {"json": {
        "started": True, "finished": False, "round": 5}}), r"round must be an integer in \[0, 1\)"),
    "round a string": (_report_to({"json": DPLCF.to_json()}, {"json": {
        "started": True, "finished": False, "round": "0"}}), "got '0'"),
    "unknown flip": (_report_to({"json": _doc(DPLCF, flip="bogus")}), "config.flip must be"),
    "epsilon a string": (_report_to({"json": _doc(DPLCF, epsilon="x")}),
                         "config.epsilon must be a number, got 'x'"),
    "epsilon NaN": (_report_to({"text": json.dumps(_doc(DPLCF, epsilon=math.nan))}),
                    "epsilon must be .*got nan"),
    "config field unknown": (_report_to({"json": _doc(DPLCF, count_method="bits")}),
                             "does not have: count_method"),
    "config field missing": (_report_to({"json": {**DPLCF.to_json(), "config": {
        k: v for k, v in DPLCF.to_json()["config"].items() if k != "neighbours"}}}),
        "lacks LocalItemCFConfig's fields: neighbours"),
    "family not registered": (_report_to({"json": {**DPLCF.to_json(), "family": "os"}}),
                              "family must be one of"),
    "family missing": (_report_to({"json": {k: v for k, v in DPLCF.to_json().items()
                                            if k != "family"}}), "malformed protocol"),
    "k a float": (_report_to({"json": _doc(FMF, k=2.5)}), "config.k must be an integer"),
    "k zero": (_report_to({"json": _doc(FMF, k=0)}), "k must be >= 1, got 0"),
    "factors beyond the policy": (_report_to({"json": _doc(FMF, factors=100)}),
                                  "max_factors = 64"),
    "alpha a string": (_report_to({"json": _doc(FMF, alpha="1")}), "config.alpha"),
    "regularization a string": (_report_to({"json": _doc(FMF, regularization="x")}),
                                "config.regularization"),
    "neighbours a float": (_report_to({"json": _doc(DPLCF, neighbours=2.5)}),
                           "config.neighbours must be an integer"),
    "submit reply not JSON": (_report_to({"json": DPLCF.to_json()}, submit={
        "status": 202, "text": "ok"}), "/v1/rounds/0/reports: the reply is not JSON"),
    "error reply a list": (_report_to({"json": DPLCF.to_json()}, submit={
        "status": 409, "json": [1]}), r"409: \[1\]"),
    "artefact without a version": (_report_to({"json": FMF.to_json()}, artefacts={
        "GET /v1/artefacts/item-matrix": {"b64": base64.b64encode(V).decode(),
                                          "headers": {"ETag": '"x"'}}}),
        "X-Dprec-Version must be a version number"),
    "artefact with a bad version": (_report_to({"json": FMF.to_json()}, artefacts={
        "GET /v1/artefacts/item-matrix": _artefact(V, **{"X-Dprec-Version": "v1"})}),
        "got 'v1'"),
    "artefact compressed": (_report_to({"json": FMF.to_json()}, artefacts={
        "GET /v1/artefacts/item-matrix": _artefact(V, **{"Content-Encoding": "gzip"})}),
        r"encoded \(gzip\), which was not asked for"),
    "artefact not a matrix": (_report_to({"json": FMF.to_json()}, artefacts={
        "GET /v1/artefacts/item-matrix": _artefact(LISTS[:len(V)])}),
        "expected a ItemMatrix message"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_replies_raise_dprec_errors_that_name_what_was_wrong(liar, tmp_path, case):
    routes, match = HOSTILE[case]
    liar.serve(routes)
    d = _device(liar, tmp_path)
    with pytest.raises(DprecError, match=match) as e:
        d.report(_history(20))
    assert type(e.value).__module__.startswith("dprec.")
    if case == "error reply a list":
        assert isinstance(e.value, ServiceError) and e.value.status == 409


def test_ranking_needs_no_mechanism_but_bounded_sizes(liar, tmp_path):
    # recommending sends nothing, so an lcf-ub protocol may rank; a report is refused
    doc = _doc(DPLCF, flip="none")
    liar.serve({"GET /v1/protocol": {"json": doc}, "GET /v1/round": OPEN,
                "GET /v1/artefacts/neighbours": _artefact(LISTS)})
    d = _device(liar, tmp_path)
    top = d.recommend(_history(20, [0]), n=3)
    assert len(top) == 3 and 0 not in top
    with pytest.raises(PolicyViolation, match="'none'"):
        d.report(_history(20, [0]))
    with pytest.raises(DprecError, match="n must be an integer >= 0"):
        d.recommend(_history(20, [0]), n=-1)
