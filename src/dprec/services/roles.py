"""The server role of a deployed protocol, built from its public description.

The service runs the very classes the simulation runs, constructed from
:class:`~dprec.systems.deployable.ProtocolInfo` by the system's
:class:`~dprec.protocol.deployment.Serving` (``systems/<name>/serve.py``) as the system
constructs them in ``fit``. The
simulation's HTTP transport compares :func:`describe_role` of the role it built with the one
the server publishes, so a server running another configuration is refused rather than
silently simulated.

What a role keeps between rounds is its broadcast (FMF-LDP's V; DPLCF keeps nothing), which
the store persists with every round: :func:`restore` rebuilds the role after a restart.
Every function here asks the descriptor; none knows a system.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dprec.errors import DprecError
from dprec.protocol.aggregation import Aggregator, make_aggregator
from dprec.protocol.engine import Server
from dprec.protocol.messages import Message
from dprec.systems.deployable import ProtocolInfo

__all__ = ["aggregator", "check_role_memory", "decode_broadcast",
           "describe_role", "diagnostics", "encode_broadcast", "encode_state", "initial_state",
           "initialise", "published_artefacts", "restore", "role_memory", "server_role"]

_GIB = float(1 << 30)

def aggregator(info: ProtocolInfo) -> Aggregator:
    """The aggregator ``info`` names, from its system's table (the server half's
    ``aggregators``: its own defences, or the plain mean)."""
    return make_aggregator(info.aggregator, info.serving().aggregators)


def server_role(info: ProtocolInfo, aggregator: Aggregator) -> Server:
    """The server role of ``info``'s system (as the system's ``fit`` builds it)."""
    return info.serving().server_role(info, aggregator)


def role_memory(info: ProtocolInfo) -> tuple[int, int, str]:
    """(bytes of the role's state, bytes it needs at its peak, what the state is), from the
    description alone."""
    return info.serving().role_memory(info)


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
    service): its class, the attributes it names public (:attr:`Server.public`) and its
    mechanism."""
    out: dict[str, Any] = {"role": type(role).__name__}
    for name in getattr(role, "public", ()):
        if hasattr(role, name):
            value = getattr(role, name)
            out[name] = value.item() if isinstance(value, np.generic) else value
    mech = getattr(role, "mechanism", None)
    out["mechanism"] = None if mech is None else repr(mech)
    return out


def encode_broadcast(info: ProtocolInfo, broadcast: Any, version: int) -> bytes:
    """The role's broadcast as the bytes the store keeps (lossless)."""
    return info.serving().encode_broadcast(info, broadcast, version)


def encode_state(info: ProtocolInfo, role: Any, broadcast: Any, version: int) -> bytes:
    """What the store keeps after ``role`` published ``broadcast`` (the broadcast, and what
    else the role's next rounds need)."""
    return info.serving().encode_state(info, role, broadcast, version)


def initial_state(info: ProtocolInfo, local: Any) -> bytes | None:
    """What the simulation's role ``local`` starts from beyond the description (None: none)."""
    return info.serving().initial_state(local)


def initialise(info: ProtocolInfo, role: Any, body: bytes) -> None:
    """Give a fresh role its initial state (before its start)."""
    info.serving().initialise(info, role, body)


def decode_broadcast(info: ProtocolInfo, body: bytes) -> Any:
    """Inverse of :func:`encode_broadcast`: what the role returned."""
    return info.serving().decode_broadcast(info, body)


def published_artefacts(info: ProtocolInfo) -> tuple[str, ...]:
    """Names of the artefacts the server publishes for ``info``'s clients."""
    return info.deployment.artefacts


def artefact_bytes(info: ProtocolInfo, name: str, body: bytes) -> bytes:
    """Artefact ``name`` made from the stored broadcast ``body``."""
    return info.serving().artefact_bytes(info, name, body)


def restore(info: ProtocolInfo, role: Any, body: bytes | None) -> None:
    """Give a fresh role the state it had after publishing ``body``."""
    info.serving().restore(info, role, body)


def diagnostics(info: ProtocolInfo, role: Any) -> dict[str, Any]:
    """What the role measured in its last round (published with the round)."""
    return info.serving().diagnostics(role)


def parse_forwarded(body: bytes) -> Message:
    """Decode a forwarded batch (any kind; the caller checks it)."""
    return Message.from_bytes(body)


def mirror(info: ProtocolInfo, local: Any, diag: dict[str, Any]) -> None:
    """Give the simulation's own (unused) role what the remote role measured, so the system
    reports the same diagnostics over either transport."""
    info.serving().mirror(local, diag)
