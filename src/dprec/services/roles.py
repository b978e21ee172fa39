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

from dprec.errors import DprecError
from dprec.protocol.aggregation import Aggregator
from dprec.protocol.deployed import ProtocolInfo
from dprec.protocol.engine import Server
from dprec.protocol.messages import ItemMatrix, ItemMatrix64, Message, NeighbourLists
from dprec.systems.dplcf.server import SimilarityServer
from dprec.systems.fmf.server import FactorServer

__all__ = ["check_role_memory", "decode_broadcast", "describe_role", "diagnostics",
           "encode_broadcast", "published_artefacts", "restore", "role_memory", "server_role"]

_GIB = float(1 << 30)

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


def role_memory(info: ProtocolInfo) -> tuple[int, int, str]:
    """(bytes of the role's state, bytes it needs at its peak, what the state is), from the
    description alone.

    FMF-LDP: V, N x F float64; starting draws it and scales the draw, and a round holds V,
    the round's sum, the new V and its encoded broadcast: 4 copies. DPLCF: the pair counts
    (N x N int32) and the similarities (N x N float32) of its round: 2 N^2 x 4 bytes.
    """
    n = info.n_items
    if info.family == "fmf":
        assert info.n_factors is not None
        state = 8 * n * info.n_factors
        return state, 4 * state, f"V ({n:,} x {info.n_factors:,} float64)"
    state = 4 * n * n
    return state, 2 * state, f"the pair counts ({n:,} x {n:,} int32)"


def check_role_memory(info: ProtocolInfo, available: int | None) -> None:
    """:class:`DprecError`, up front, if the role cannot fit in ``available`` bytes."""
    state, peak, what = role_memory(info)
    if available is not None and peak > available:
        raise DprecError(f"this server cannot run {info.system} with N = {info.n_items:,}: "
                         f"{what} takes {state / _GIB:,.1f} GiB and a round about "
                         f"{peak / _GIB:,.1f} GiB; {available / _GIB:,.1f} GiB are available. "
                         "Choose fewer items or factors")


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
