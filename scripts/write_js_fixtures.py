"""Write the Python side of the TypeScript SDK's wire conformance fixtures (issue 34 §1).

Usage: PYTHONPATH=src .venv/bin/python scripts/write_js_fixtures.py

Writes clients/js/fixtures/python/{messages,seal,configs}.json from Python's own encoders,
sealed box and protocol descriptions; clients/js/test/*.test.ts read them (decode == fields,
encode == bytes, the box reproduced from its fixed ephemeral key and opened, every invalid
byte string and config refused). Everything is derived from fixed seeds, so a rerun writes
the same bytes: tests/clients/js/test_python_fixtures.py checks the committed files are
what this script writes now, so a change to a Python encoder breaks a test until the
fixtures are rewritten and the TypeScript side agrees with them.
"""

from __future__ import annotations

import hashlib
import json
import struct
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from dprec.protocol.messages import (
    GradientReports,
    ItemMatrix,
    ItemMatrix64,
    Message,
    MessageError,
    ShuffledReports,
    ShuffledValues,
    ValueReports,
)
from dprec.protocol.secure_sum.messages import associated_data, run_id
from dprec.protocol.secure_sum.sealed import KeyPair, _seal_with_ephemeral, open_box
from dprec.systems.deployable import ProtocolInfo
from dprec.systems.dp_pop.config import DpPopConfig
from dprec.systems.dplcf.config import LocalItemCFConfig
from dprec.systems.dplcf.messages import NeighbourLists, ObfuscatedBits
from dprec.systems.fmf.config import FMFConfig

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "clients" / "js" / "fixtures" / "python"
FORMAT = "dprec js conformance fixtures v1"


def _dump(doc: dict[str, Any]) -> str:
    """Strict JSON, one list entry per line (readable diffs)."""
    def value(v: Any) -> str:
        if isinstance(v, list):
            return "[\n" + ",\n".join(json.dumps(x, allow_nan=False) for x in v) + "\n]"
        return json.dumps(v, allow_nan=False)
    return "{\n" + ",\n".join(f"{json.dumps(k)}: {value(v)}" for k, v in doc.items()) + "\n}\n"


def _floats(a: np.ndarray) -> list[float]:
    """Exact: a float32 widens to the float64 that JSON carries without loss."""
    return [float(v) for v in np.asarray(a).ravel()]


def _ints(a: np.ndarray) -> list[int]:
    return [int(v) for v in np.asarray(a).ravel()]


def _fields(m: Message) -> dict[str, Any]:
    """The message's fields under the TypeScript SDK's names (i64 as decimal strings)."""
    if isinstance(m, GradientReports | ShuffledReports | ValueReports | ShuffledValues):
        out: dict[str, Any] = {}
        if isinstance(m, GradientReports | ValueReports):
            out["clientId"] = str(m.client_id)
        out["items"], out["factors"] = _ints(m.items), _ints(m.factors)
        if isinstance(m, GradientReports | ShuffledReports):
            out["bits"] = _ints(m.bits)
        else:
            out["values"] = _floats(m.values)
        return out
    if isinstance(m, ItemMatrix):
        rows, cols = m.matrix.shape
        return {"epoch": str(m.epoch), "rows": rows, "cols": cols, "matrix": _floats(m.matrix)}
    if isinstance(m, ObfuscatedBits):
        return {"clients": m.n_clients, "nItems": m.n_items, "packed": _ints(m.packed)}
    assert isinstance(m, NeighbourLists)
    return {"nItems": m.n_items, "k": m.k, "indices": _ints(m.indices),
            "sims": _floats(m.sims), "full": None if m.full is None else _floats(m.full)}


def valid_messages() -> list[tuple[str, Message]]:
    """One or more messages of every kind a dplcf-sp or fmf-ldp device sends or reads."""
    rng = np.random.default_rng(34)
    k = 13
    items = rng.integers(0, 1682, k, dtype=np.int32)
    factors = rng.integers(0, 10, k, dtype=np.uint8)
    values = rng.normal(0, 2, 5).astype(np.float32)
    values[1] = -0.0
    dense = rng.random((3, 16)) < 0.3
    idx = rng.integers(0, 4, (4, 2), dtype=np.int32)
    full = rng.random((3, 3)).astype(np.float32)
    return [
        ("gradient-reports-13", GradientReports((1 << 53) + 1, items, factors,
                                                rng.integers(0, 2, k))),
        ("gradient-reports-empty", GradientReports(-7, [], [], [])),
        ("gradient-reports-max-index", GradientReports(
            (1 << 63) - 1, [(1 << 24) - 1, 0], [255, 0], [1, 0])),
        ("value-reports-5", ValueReports(-(1 << 63), items[:5], factors[:5], values)),
        ("shuffled-reports-9", ShuffledReports(items[:9], factors[:9], rng.integers(0, 2, 9))),
        ("shuffled-values-3", ShuffledValues(items[:3], factors[:3], values[:3])),
        ("item-matrix-4x3", ItemMatrix(rng.normal(0, 0.1, (4, 3)).astype(np.float32), 12)),
        ("item-matrix-empty", ItemMatrix(np.zeros((0, 5), np.float32), -1)),
        ("item-matrix64-3x2", ItemMatrix64(np.array([[0.1, -2.5e300], [1e-300, 5e-324],
                                                     [-0.0, 1.0 / 3.0]]), 3)),
        ("obfuscated-bits-1x13", ObfuscatedBits.pack(dense[:1, :13])),
        ("obfuscated-bits-3x16", ObfuscatedBits.pack(dense)),
        ("neighbour-lists-4x2", NeighbourLists(idx, rng.random((4, 2)).astype(np.float32))),
        ("neighbour-lists-full-3x2", NeighbourLists(idx[:3] % 3,
                                                    rng.random((3, 2)).astype(np.float32), full)),
    ]


def _patch(data: bytes, offset: int, new: bytes) -> bytes:
    return data[:offset] + new + data[offset + len(new):]


def invalid_messages(valid: dict[str, Message]) -> list[tuple[str, type[Message], bytes]]:
    """Byte strings every decoder must refuse: (name, the class to decode as, bytes)."""
    g = valid["gradient-reports-13"].to_bytes()
    v = valid["value-reports-5"].to_bytes()
    m = valid["item-matrix-4x3"].to_bytes()
    o = valid["obfuscated-bits-1x13"].to_bytes()
    n = valid["neighbour-lists-4x2"].to_bytes()
    nan32, inf32 = struct.pack("<f", float("nan")), struct.pack("<f", float("inf"))
    return [
        ("header-truncated", GradientReports, g[:5]),
        ("empty", GradientReports, b""),
        ("bad-magic", GradientReports, b"DPRX" + g[4:]),
        ("version-1", GradientReports, _patch(g, 4, b"\x01")),
        ("version-3", GradientReports, _patch(g, 4, b"\x03")),
        ("unknown-kind-99", GradientReports, _patch(g, 5, b"\x63")),
        ("other-kind", ValueReports, g),
        ("gradient-truncated", GradientReports, g[:-1]),
        ("gradient-trailing", GradientReports, g + b"\x00"),
        ("gradient-fixed-truncated", GradientReports, g[:6 + 11]),
        ("gradient-padding-bit", GradientReports, g[:-1] + bytes([g[-1] | 1])),
        ("gradient-k-too-large", GradientReports, _patch(g, 14, struct.pack("<I", 1 << 31))),
        ("values-nan", ValueReports, v[:-4] + nan32),
        ("values-inf", ValueReports, v[:-4] + inf32),
        ("shuffled-m-huge", ShuffledReports, _patch(valid["shuffled-reports-9"].to_bytes(), 6,
                                                    struct.pack("<Q", (1 << 64) - 1))),
        ("matrix-nan", ItemMatrix, m[:-4] + nan32),
        ("matrix-rows-over-max", ItemMatrix, _patch(m, 14, struct.pack("<I", (1 << 24) + 1))),
        ("matrix-trailing", ItemMatrix, m + b"\x00\x00\x00\x00"),
        ("matrix-as-matrix64", ItemMatrix64, m),
        ("obfuscated-padding-bit", ObfuscatedBits, o[:-1] + bytes([o[-1] | 1])),
        ("obfuscated-items-over-max", ObfuscatedBits, _patch(o, 10, struct.pack(
            "<I", (1 << 24) + 8))),
        ("neighbours-index-out-of-range", NeighbourLists, _patch(n, 15, struct.pack("<i", 4))),
        ("neighbours-index-negative", NeighbourLists, _patch(n, 15, struct.pack("<i", -1))),
        ("neighbours-has-full-2", NeighbourLists, _patch(n, 14, b"\x02")),
        ("neighbours-sims-nan", NeighbourLists, n[:-4] + nan32),
        ("neighbours-full-missing", NeighbourLists, _patch(n, 14, b"\x01")),
    ]


def _decoded_name(cls: type[Message]) -> str:
    return cls.__name__


def messages_doc() -> dict[str, Any]:
    """messages.json: each valid message's fields and bytes, and the refused byte strings
    (each checked here to be refused by Python's own decoder too)."""
    valid = valid_messages()
    out_valid = []
    for name, msg in valid:
        data = msg.to_bytes()
        assert type(msg).from_bytes(data) == msg
        out_valid.append({"name": name, "kind": type(msg).__name__, "fields": _fields(msg),
                          "hex": data.hex()})
    out_invalid = []
    for name, cls, data in invalid_messages(dict(valid)):
        try:
            cls.from_bytes(data)
        except MessageError:
            pass
        else:  # pragma: no cover - a fixture that Python accepts is a bug of this script
            raise AssertionError(f"Python accepts the invalid fixture {name}")
        out_invalid.append({"name": name, "decodeAs": _decoded_name(cls), "hex": data.hex()})
    return {"format": FORMAT, "valid": out_valid, "invalid": out_invalid}


def _key(label: str) -> bytes:
    return hashlib.sha256(b"dprec js fixture " + label.encode()).digest()


def seal_doc() -> dict[str, Any]:
    """seal.json: boxes sealed with fixed ephemeral keys (:func:`_seal_with_ephemeral`), each
    with its recipient key pair, aad and plaintext; the secure sum's run id and associated
    data for fixed keys."""
    recipient = KeyPair.from_raw(_key("recipient"))
    proxy, server = KeyPair.from_raw(_key("proxy")), KeyPair.from_raw(_key("server"))
    run = run_id(proxy.public, server.public)
    message_id = _key("message id")[:16]
    aad = associated_data(run, 7, message_id, "server")
    cases = [("short", b"aad", b"hello"), ("empty-plaintext", b"", b""),
             ("secure-sum-aad", aad, bytes(range(256)) * 3)]
    boxes = []
    for i, (name, a, plain) in enumerate(cases):
        eph = _key(f"ephemeral {i}")
        box = _seal_with_ephemeral(eph, recipient.public, plain, a)
        assert open_box(recipient, box, a) == plain
        boxes.append({"name": name, "recipientPrivate": recipient.private_raw().hex(),
                      "recipientPublic": recipient.public.hex(), "ephemeralPrivate": eph.hex(),
                      "aad": a.hex(), "plaintext": plain.hex(), "box": box.hex()})
    aads = [{"proxyPublic": proxy.public.hex(), "serverPublic": server.public.hex(),
             "runId": run.hex(), "roundId": str(r), "messageId": message_id.hex(), "role": role,
             "aad": associated_data(run, r, message_id, role).hex()}
            for r, role in ((7, "server"), ((1 << 64) - 1, "proxy"))]
    return {"format": FORMAT, "boxes": boxes, "associatedData": aads}


def _protocol(system: str, n_items: int, config: Any) -> dict[str, Any]:
    return ProtocolInfo(system, n_items, config).to_json()


def _changed(doc: dict[str, Any], **config: Any) -> dict[str, Any]:
    out = json.loads(json.dumps(doc))
    for key, value in config.items():
        if value is _DROP:
            del out["config"][key]
        else:
            out["config"][key] = value
    return out


_DROP = object()


def configs_doc() -> dict[str, Any]:
    """configs.json: published protocol descriptions a device must accept, and malformed
    ones it must refuse, each naming the field the refusal must name (checked here against
    Python's own decoder, :meth:`ProtocolInfo.from_json`)."""
    dplcf = _protocol("dplcf-sp", 1682, LocalItemCFConfig(epsilon=2.0, history_cap=50))
    fmf = _protocol("fmf-ldp", 1682, FMFConfig(epsilon=1.5, k=20, factors=8))
    pop = _protocol("dp-pop", 1682, DpPopConfig(n_clients=220, min_honest=200))
    valid = [dplcf, _protocol("dplcf-sp", 10, LocalItemCFConfig()), fmf,
             _protocol("fmf-ldp", 50, FMFConfig(mechanism="piecewise", cells="assigned",
                                                user_budget=4.0)),
             pop, _protocol("dp-pop", 7, DpPopConfig(validity="none", k=3, n_clients=20))]
    invalid = [
        ("dplcf-unknown-key", _changed(dplcf, colour="red"), "colour"),
        ("dplcf-missing-key", _changed(dplcf, epsilon=_DROP), "epsilon"),
        ("dplcf-bool-for-number", _changed(dplcf, epsilon=True), "epsilon"),
        ("dplcf-string-for-number", _changed(dplcf, epsilon="2"), "epsilon"),
        ("dplcf-literal", _changed(dplcf, flip="sideways"), "flip"),
        ("dplcf-null-not-optional", _changed(dplcf, neighbours=None), "neighbours"),
        ("dplcf-fraction-for-int", _changed(dplcf, history_cap=2.5), "history_cap"),
        ("dplcf-epsilon-negative", _changed(dplcf, epsilon=-1), "epsilon"),
        ("fmf-unknown-key", _changed(fmf, extra=1), "extra"),
        ("fmf-missing-key", _changed(fmf, cells=_DROP), "cells"),
        ("fmf-string-for-int", _changed(fmf, k="20"), "k"),
        ("fmf-literal", _changed(fmf, mechanism="laplace"), "mechanism"),
        ("fmf-bool-type", _changed(fmf, exact=0), "exact"),
        ("fmf-factors-over-255", _changed(fmf, factors=256), "factors"),
        ("fmf-k-zero", _changed(fmf, k=0), "k"),
        ("fmf-exact-true", _changed(fmf, exact=True), "exact"),
        ("dp-pop-unknown-key", _changed(pop, noise="x"), "noise"),
        ("dp-pop-missing-key", _changed(pop, validity=_DROP), "validity"),
        ("dp-pop-literal", _changed(pop, aggregation="central"), "aggregation"),
        ("dp-pop-delta-one", _changed(pop, delta=1), "delta"),
        ("dp-pop-n-clients-null", _changed(pop, n_clients=None, min_honest=None), "n_clients"),
        ("dp-pop-trusted", _changed(pop, aggregation="trusted", min_honest=None), "aggregation"),
        ("dp-pop-min-honest-over-clients", _changed(pop, min_honest=221), "min_honest"),
    ]
    out_invalid = []
    for name, doc, field in invalid:
        try:
            ProtocolInfo.from_json(doc)
        except ValueError as e:
            assert field in str(e), (name, str(e))
        else:  # pragma: no cover - a fixture that Python accepts is a bug of this script
            raise AssertionError(f"Python accepts the invalid config fixture {name}")
        out_invalid.append({"name": name, "doc": doc, "field": field})
    for doc in valid:
        assert ProtocolInfo.from_json(doc).to_json() == doc
    return {"format": FORMAT, "valid": valid, "invalid": out_invalid}


FIXTURES: dict[str, Callable[[], dict[str, Any]]] = {
    "messages.json": messages_doc, "seal.json": seal_doc, "configs.json": configs_doc}


def fixture_texts() -> dict[str, str]:
    """File name -> the text this script writes."""
    return {name: _dump(build()) for name, build in FIXTURES.items()}


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, text in fixture_texts().items():
        (OUT / name).write_text(text)
        print(f"wrote {(OUT / name).relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
