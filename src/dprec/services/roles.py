"""The server role of a deployed protocol, built from its public description.

The service runs the very classes the simulation runs
(:class:`~dprec.systems.fmf.server.FactorServer`,
:class:`~dprec.systems.dplcf.server.SimilarityServer`), constructed here from
:class:`~dprec.protocol.deployed.ProtocolInfo` as the systems construct them in ``fit``. The
simulation's HTTP transport compares :func:`describe_role` of the role it built with the one
the server publishes, so a server running another configuration is refused rather than
silently simulated.

What a role keeps between rounds is its broadcast (FMF-LDP's V; DPLCF keeps nothing), which
the store persists with every round: :func:`restore` rebuilds the role after a restart.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dprec.protocol.aggregation import Aggregator
from dprec.protocol.deployed import ProtocolInfo
from dprec.protocol.engine import Server
from dprec.protocol.messages import ItemMatrix, ItemMatrix64, Message, NeighbourLists
from dprec.systems.dplcf.server import SimilarityServer
from dprec.systems.fmf.server import FactorServer

__all__ = ["decode_broadcast", "describe_role", "diagnostics", "encode_broadcast",
           "published_artefacts", "restore", "server_role"]

_PUBLIC = ("n_items", "factors", "lr", "reg", "steps", "clip", "init_scale", "estimator",
           "neighbours", "include_full", "count_method")


def server_role(info: ProtocolInfo, aggregator: Aggregator) -> Server:
    """The server role of ``info``'s system (as ``FederatedMF.fit``/``LocalItemCF.fit``)."""
    c = info.config
    mechanism = info.mechanism()
    if info.family == "fmf":
        return FactorServer(info.n_items, int(c["factors"]), float(c["lr"]),
                            float(c["regularization"]), int(c["server_steps"]),
                            float(c["clip"]), float(c["init_scale"]), mechanism,  # type: ignore[arg-type]
                            aggregator)
    extra = {"count_method": c["count_method"]} if "count_method" in c else {}
    return SimilarityServer(info.n_items, mechanism, c["estimator"],  # type: ignore[arg-type]
                            int(c["neighbours"]), c["neighbourhood"] == "user", aggregator,
                            **extra)


def describe_role(role: Any) -> dict[str, Any]:
    """The public parameters of a server role (what must agree between simulation and
    service)."""
    out: dict[str, Any] = {"role": type(role).__name__}
    for name in _PUBLIC:
        if hasattr(role, name):
            value = getattr(role, name)
            out[name] = value.item() if isinstance(value, np.generic) else value
    mech = getattr(role, "mechanism", None)
    out["mechanism"] = None if mech is None else repr(mech)
    return out


def encode_broadcast(info: ProtocolInfo, broadcast: Any, version: int) -> bytes:
    """The role's broadcast as the bytes the store keeps (lossless)."""
    if info.family == "fmf":
        return ItemMatrix64(np.asarray(broadcast, np.float64), version).to_bytes()
    assert isinstance(broadcast, NeighbourLists)
    return broadcast.to_bytes()


def decode_broadcast(info: ProtocolInfo, body: bytes) -> Any:
    """Inverse of :func:`encode_broadcast`: what the role returned."""
    if info.family == "fmf":
        return ItemMatrix64.from_bytes(body).matrix.astype(np.float64)
    return NeighbourLists.from_bytes(body)


def published_artefacts(info: ProtocolInfo) -> tuple[str, ...]:
    """Names of the artefacts the server publishes for ``info``'s clients."""
    return ("item-matrix", "item-matrix-f64") if info.family == "fmf" else ("neighbours",)


def artefact_bytes(info: ProtocolInfo, name: str, body: bytes) -> bytes:
    """Artefact ``name`` made from the stored broadcast ``body``."""
    if name == "item-matrix":
        m = ItemMatrix64.from_bytes(body)
        return ItemMatrix(m.matrix, m.epoch).to_bytes()
    return body


def restore(info: ProtocolInfo, role: Any, body: bytes | None) -> None:
    """Give a fresh role the state it had after publishing ``body``."""
    if info.family == "fmf" and body is not None:
        role.V = decode_broadcast(info, body)


def diagnostics(role: Any) -> dict[str, Any]:
    """What the role measured in its last round (published with the round)."""
    est = getattr(role, "estimate", None)
    if est is None:
        return {}
    return {"clipped_pairs": int(est.clipped), "shrinkage_phi": est.shrinkage_phi,
            "users_received": int(getattr(role, "users_received", 0))}


def parse_forwarded(body: bytes) -> Message:
    """Decode a forwarded batch (any kind; the caller checks it)."""
    return Message.from_bytes(body)


def mirror(local: Any, diag: dict[str, Any]) -> None:
    """Give the simulation's own (unused) role what the remote role measured, so the system
    reports the same diagnostics over either transport."""
    if isinstance(local, SimilarityServer) and diag:
        from dprec.systems.dplcf.server import SimilarityEstimate
        local.estimate = SimilarityEstimate(np.empty((0, 0), np.float32),
                                            int(diag["clipped_pairs"]), diag["shrinkage_phi"])
        local.users_received = int(diag["users_received"])
