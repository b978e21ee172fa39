"""TypeScript -> Python wire conformance (issue 34 §1): the messages, sealed boxes and device
steps that clients/js writes into clients/js/fixtures/ts/ (``npm run fixtures``) decode with
Python's decoders to the same fields and bytes, open with Python's sealed box, and pass the
server-side checks of their protocol (for FMF-LDP's cells=assigned, the proxy's own cell
check). The Python fixtures (clients/js/fixtures/python/) are what
scripts/write_js_fixtures.py writes now, so drift on either side fails a test."""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from dprec.protocol.messages import Message, MessageError
from dprec.protocol.secure_sum.errors import TamperedCiphertextError
from dprec.protocol.secure_sum.messages import associated_data, run_id
from dprec.protocol.secure_sum.sealed import KeyPair, _seal_with_ephemeral, open_box
from dprec.systems.deployable import ProtocolInfo
from dprec.systems.dplcf.client import local_scores
from dprec.systems.dplcf.messages import ObfuscatedBits
from dprec.systems.fmf.cells import assigned_cells, round_seed
from dprec.systems.fmf.client import user_vectors

ROOT = Path(__file__).parents[3]
TS = ROOT / "clients" / "js" / "fixtures" / "ts"
PY = ROOT / "clients" / "js" / "fixtures" / "python"


def _load(name: str) -> dict:
    return json.loads((TS / name).read_text())


@functools.cache
def _writer():
    spec = importlib.util.spec_from_file_location("write_js_fixtures",
                                                  ROOT / "scripts" / "write_js_fixtures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_python_fixtures_are_what_the_writer_writes_now():
    texts = _writer().fixture_texts()  # the folder also holds other writers' files (prio3_*)
    assert sorted(texts) == ["configs.json", "messages.json", "seal.json"]
    for name, text in texts.items():
        assert (PY / name).read_text() == text, (
            f"clients/js/fixtures/python/{name} is stale: run scripts/write_js_fixtures.py "
            "and make the TypeScript tests pass against it")


MESSAGES = _load("messages.json")["valid"]


@pytest.mark.parametrize("case", MESSAGES, ids=[c["name"] for c in MESSAGES])
def test_ts_message_decodes_in_python_to_its_fields_and_bytes(case):
    data = bytes.fromhex(case["hex"])
    message = Message.from_bytes(data)
    assert type(message).__name__ == case["kind"]
    assert message.to_bytes() == data
    writer = _writer()
    assert writer._fields(message) == case["fields"]


def test_every_kind_of_the_ts_sdk_is_in_the_ts_fixtures():
    assert {c["kind"] for c in MESSAGES} == {
        "GradientReports", "ValueReports", "ShuffledReports", "ShuffledValues", "ItemMatrix",
        "ItemMatrix64", "ObfuscatedBits", "NeighbourLists"}


SEAL = _load("seal.json")


@pytest.mark.parametrize("case", SEAL["boxes"], ids=[c["name"] for c in SEAL["boxes"]])
def test_ts_sealed_box_opens_in_python_and_is_reproduced(case):
    keys = KeyPair.from_raw(bytes.fromhex(case["recipientPrivate"]))
    assert keys.public.hex() == case["recipientPublic"]
    box, aad = bytes.fromhex(case["box"]), bytes.fromhex(case["aad"])
    assert open_box(keys, box, aad).hex() == case["plaintext"]
    again = _seal_with_ephemeral(bytes.fromhex(case["ephemeralPrivate"]), keys.public,
                                 bytes.fromhex(case["plaintext"]), aad)
    assert again == box
    tampered = bytearray(box)
    tampered[-1] ^= 1
    with pytest.raises(TamperedCiphertextError):
        open_box(keys, bytes(tampered), aad)


def test_ts_run_id_and_associated_data_are_pythons():
    for case in SEAL["associatedData"]:
        run = run_id(bytes.fromhex(case["proxyPublic"]), bytes.fromhex(case["serverPublic"]))
        assert run.hex() == case["runId"]
        aad = associated_data(run, int(case["roundId"]), bytes.fromhex(case["messageId"]),
                              case["role"])
        assert aad.hex() == case["aad"]


STEPS = _load("steps.json")["steps"]


@pytest.mark.parametrize("case", STEPS, ids=[c["name"] for c in STEPS])
def test_ts_device_step_passes_the_servers_checks(case):
    info = ProtocolInfo.from_json(case["protocol"])
    body = bytes.fromhex(case["message"])
    message = info.upload.from_bytes(body)
    assert len(body) == info.upload_size()
    info.deployment.check_upload(message, info)
    if info.family == "dplcf":
        assert isinstance(message, ObfuscatedBits)
        return
    assert message.client_id == int(case["clientId"])
    if info.config.cells == "assigned":
        V = Message.from_bytes(bytes.fromhex(case["artefact"])).matrix
        items, factors = assigned_cells(round_seed(V), [bytes.fromhex(case["cellsToken"])],
                                        info.k, info.n_items, info.n_factors)
        np.testing.assert_array_equal(message.items, items[0])
        np.testing.assert_array_equal(message.factors, factors[0])


def test_a_changed_ts_step_message_is_refused_by_python():
    case = next(c for c in STEPS if c["name"] == "ts-fmf-ldp-binary-chosen")
    body = bytes.fromhex(case["message"])
    with pytest.raises(MessageError):
        Message.from_bytes(body + b"\x00")
    info = ProtocolInfo.from_json(case["protocol"])
    short = info.upload.from_bytes(body)
    fewer = type(short)(short.client_id, short.items[:-1], short.factors[:-1], short.bits[:-1])
    with pytest.raises(MessageError):
        info.deployment.check_upload(fewer, info)


SCORES = _load("steps.json")["scores"]


def _row(history: dict, n_items: int) -> sp.csr_matrix:
    row = np.zeros((1, n_items))
    row[0, history["items"]] = history["values"]
    return sp.csr_matrix(row)


@pytest.mark.parametrize("case", SCORES, ids=[c["name"] for c in SCORES])
def test_ts_on_device_scores_are_pythons(case):
    artefact = Message.from_bytes(bytes.fromhex(case["artefact"]))
    if case["system"] == "dplcf":
        h = _row(case["history"], artefact.n_items)
        want = local_scores(h, artefact, case["neighbourhood"], case["k"])[0]
        np.testing.assert_allclose(case["scores"], want, rtol=1e-6, atol=1e-6)
    else:
        V = artefact.matrix
        x = user_vectors(V, _row(case["history"], V.shape[0]), case["alpha"],
                         case["regularization"])
        np.testing.assert_allclose(case["scores"], (x @ V.T)[0], rtol=1e-9, atol=1e-12)
    assert np.ptp(case["scores"]) > 0  # scores that tell items apart


def test_the_fixed_ephemeral_seal_is_for_fixtures_only():
    """No protocol code seals with a chosen ephemeral key (it would reuse key and nonce)."""
    src = ROOT / "src" / "dprec"
    users = sorted(p.relative_to(src).as_posix() for p in src.rglob("*.py")
                   if "_seal_with_ephemeral" in p.read_text())
    assert users == ["protocol/secure_sum/sealed.py"]
