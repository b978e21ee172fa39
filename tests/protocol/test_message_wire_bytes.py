"""Every message kind's wire bytes, pinned: a fixed instance of each kind encodes to the
bytes recorded when the kind was added, and every kind defined anywhere in the package has
such a pin (where a message class lives is free; its bytes are not)."""

import ast
import hashlib
from pathlib import Path

import numpy as np

import dprec.protocol.messages as framing
from dprec.protocol.messages import Message
from dprec.protocol.secure_sum import wire as secure_sum
from dprec.systems.dp_fedavg import messages as dp_fedavg
from dprec.systems.dp_pop import messages as dp_pop
from dprec.systems.dpals import messages as dpals
from dprec.systems.dplcf import messages as dplcf
from dprec.systems.ldp_svd import messages as ldp_svd
from dprec.systems.privrec import messages as privrec


def _kinds_defined_in(path: Path) -> set[str]:
    """The classes of a source file that set a ``KIND`` (the registered message kinds; the
    base's 0 registers nothing)."""
    tree = ast.parse(path.read_text())
    return {node.name for node in tree.body if isinstance(node, ast.ClassDef)
            and any(isinstance(s, ast.AnnAssign) and getattr(s.target, "id", "") == "KIND"
                    and getattr(s.value, "value", 0) != 0 for s in node.body)}


def _instances() -> dict[str, Message]:
    """One fixed instance of every kind (contents drawn from a seeded generator)."""
    rng = np.random.default_rng(7)

    def f(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    return {
        "GradientReports": framing.GradientReports(5, [1, 2, 3], [0, 1, 2], [1, 0, 1]),
        "ShuffledReports": framing.ShuffledReports(list(range(1, 10)), [0] * 9,
                                                   [1, 0] * 4 + [1]),
        "ValueReports": framing.ValueReports(-3, [1, 7], [0, 3], [0.5, -0.25]),
        "ShuffledValues": framing.ShuffledValues([1, 7], [0, 3], [0.5, -0.25]),
        "ItemMatrix": framing.ItemMatrix(f(4, 3), 9),
        "ItemMatrix64": framing.ItemMatrix64(f(4, 3).astype(np.float64), 2),
        "ObfuscatedBits": dplcf.ObfuscatedBits.pack(rng.integers(0, 2, (3, 13))),
        "NeighbourLists": dplcf.NeighbourLists(np.array([[1, 2], [0, 2], [0, 1]]), f(3, 2),
                                               f(3, 3)),
        "ModelBroadcast": privrec.ModelBroadcast(f(6), np.array([3, 1, 4]), 7, 2.5),
        "ModelUpdates": privrec.ModelUpdates(f(3, 6), np.array([1, 0, 1])),
        "RatingUpload": ldp_svd.RatingUpload(4, [1, 5], [0.5, 1.0]),
        "RatingBatch": ldp_svd.RatingBatch([0, 0, 2], [1, 3, 0], [0.1, 0.2, 0.3]),
        "RatingModel": ldp_svd.RatingModel(3.5, f(2, 2).astype(float), f(3, 2).astype(float),
                                           [0.1, 0.2], [0.0, 0.1, 0.2], [1, 0], [1, 1, 0]),
        "UpdateUpload": privrec.UpdateUpload(4, f(6), True),
        "UpdateBatch": privrec.UpdateBatch(np.array([1, 5]), f(2, 6), np.array([1, 0])),
        "InitialModel": privrec.InitialModel(f(6), np.array([2, 3, 9])),
        "ServerState": privrec.ServerState(
            privrec.ModelBroadcast(f(6), np.array([3, 1, 4]), 7, 2.5),
            {"bit_generator": "PCG64", "state": "12345", "inc": "67", "has_uint32": 0,
             "uinteger": 0}),
        "SumUpload": secure_sum.SumUpload(bytes(range(40))),
        "SumRelease": secure_sum.SumRelease(b"DSR2" + bytes(range(44))),
        "PopularityModel": dp_pop.PopularityModel(bytes(range(32)), np.array([3, -1, 7]), 5),
        "PopularityState": dp_pop.PopularityState(
            bytes(range(32, 64)),
            dp_pop.PopularityModel(bytes(range(32)), np.array([3, -1, 7]), 5)),
        "DpalsModel": dpals.DpalsModel(bytes(range(32)), np.arange(6.0).reshape(3, 2) / 4,
                                       np.array([3, -1, 7]), 5),
        "DpalsState": dpals.DpalsState(
            bytes(range(32, 64)),
            dpals.DpalsModel(bytes(range(32)), np.arange(6.0).reshape(3, 2) / 4,
                             np.array([3, -1, 7]), 5)),
        "FedAvgModel": dp_fedavg.FedAvgModel(bytes(range(32)),
                                             np.arange(6.0).reshape(3, 2) / 4, 5),
        "FedAvgState": dp_fedavg.FedAvgState(
            bytes(range(32, 64)),
            dp_fedavg.FedAvgModel(bytes(range(32)), np.arange(6.0).reshape(3, 2) / 4, 5)),
    }


# (bytes, sha256 prefix) of each instance, recorded before the messages moved (commit 7a6cbd8)
WIRE = {
    "GradientReports": (31, "619807e33ae983e4"), "ShuffledReports": (52, "fd7494ffcdf05e34"),
    "ValueReports": (34, "3ed09260820a942c"), "ShuffledValues": (30, "34cd28f2018831bb"),
    "ItemMatrix": (70, "95383fb602abb894"), "ItemMatrix64": (118, "8b40562481e0b8d4"),
    "ObfuscatedBits": (20, "b2cf7ee6aea0a8ea"), "NeighbourLists": (99, "289bafa281697d5e"),
    "ModelBroadcast": (66, "86157aeb2a4e49e9"), "ModelUpdates": (89, "3dd7ff47a84792ed"),
    "RatingUpload": (42, "19655b8993036285"), "RatingBatch": (74, "b57c8f644d884cc6"),
    "RatingModel": (151, "527249040946f28b"),
    # PrivRec's service kinds and dp-pop's, recorded from their homes at 357c2cb
    "UpdateUpload": (43, "545c6066cd3aa02e"), "UpdateBatch": (80, "f2a7a98a1fc875b2"),
    "InitialModel": (62, "8e9a54954216d23a"), "ServerState": (165, "b3849bd2d31802ba"),
    "SumUpload": (46, "fe11dc0905ceb5d6"), "SumRelease": (54, "a8d43686b780679b"),
    "PopularityModel": (74, "219ac57c5d91de55"), "PopularityState": (112, "099614e9d15ff5fb"),
    # dpals' kinds, recorded from their home when they were added (issue 24)
    "DpalsModel": (130, "493e16b9e6226ac7"), "DpalsState": (168, "f3671391a808a4f2"),
    # dp-fedavg's service kinds, recorded from their home when they were added (issue 24)
    "FedAvgModel": (106, "aed04bcd9a9dff6a"), "FedAvgState": (144, "ff1cb70350a705f5"),
}


def test_every_kind_keeps_its_wire_bytes():
    got = {}
    for name, msg in _instances().items():
        raw = msg.to_bytes()
        assert Message.from_bytes(raw) == msg and msg.nbytes == len(raw)
        got[name] = (len(raw), hashlib.sha256(raw).hexdigest()[:16])
    assert got == WIRE


def test_every_message_kind_in_the_package_has_a_wire_pin():
    """A kind defined anywhere in the package (read from the sources) that WIRE does not pin
    fails: a new message is recorded when it is added."""
    package = Path(framing.__file__).parents[1]
    defined = {name for path in package.rglob("*.py") for name in _kinds_defined_in(path)}
    assert defined == set(WIRE)
