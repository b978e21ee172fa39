"""A protocol as its services publish it: what every party needs to know, and the checks
each applies to what it receives.

:class:`ProtocolInfo` is the public description the server serves at ``GET /v1/protocol``:
the system (``fmf-ldp``, ``dplcf-sp``, ...), the item count, the number of rounds and the
system's config (all of it public: mechanisms, k, learning rate, ...). The proxy reads it
to check submissions, a device to build its client step, the simulation to check that the
server runs the configuration it simulates.

The checks refuse what the mechanism cannot output (DESIGN.md, "reject bad input"): a
message of the wrong type, a report whose (item, factor) index is out of range, a value
outside the mechanism's output range, a message with the wrong number of reports or items.
The decoders (:mod:`dprec.protocol.messages`) already guarantee that a bit is a bit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from dprec.errors import DprecError
from dprec.protocol.deployment import Deployment, deployment_for
from dprec.protocol.messages import MAX_ITEMS, Message, MessageError

__all__ = ["ProtocolInfo", "check_forwarded", "check_upload"]


@dataclass(frozen=True)
class ProtocolInfo:
    """The public description of a deployed protocol; what differs between systems is
    asked of its :attr:`deployment` (:mod:`dprec.protocol.deployment`)."""

    system: str
    """Registry name of the system, e.g. ``fmf-ldp`` or ``dplcf-sp``."""
    n_items: int
    """N, the number of items."""
    config: dict[str, Any]
    """The system's config (its dataclass as a dict)."""
    aggregator: str = "mean"
    """The server's aggregator (:mod:`dprec.protocol.aggregation`)."""
    deployment: Deployment = field(init=False, repr=False, compare=False)
    """The descriptor of the system the config belongs to."""

    def __post_init__(self) -> None:
        if not isinstance(self.system, str) or not self.system:
            raise DprecError(f"system must be a name, got {self.system!r}")
        if isinstance(self.n_items, bool) or not isinstance(self.n_items, int) \
                or not 1 <= self.n_items <= MAX_ITEMS:
            raise DprecError(f"n_items must be an integer in [1, {MAX_ITEMS}], got "
                             f"{self.n_items!r}")
        if not isinstance(self.config, dict):
            raise DprecError("config must be a mapping")
        deployment = deployment_for(self.config)
        deployment.validate(self.config)
        object.__setattr__(self, "deployment", deployment)

    @property
    def family(self) -> str:
        """The descriptor's name (``fmf``, ``dplcf``): what a device policy keys
        mechanisms by."""
        return self.deployment.name

    # -- what travels ---------------------------------------------------------------------

    @property
    def rounds(self) -> int:
        """Rounds (FMF-LDP epochs; DPLCF has one)."""
        return self.deployment.rounds(self.config)

    @property
    def k(self) -> int | None:
        """Reports per client and round (FMF-LDP)."""
        return self.deployment.k(self.config)

    @property
    def n_factors(self) -> int | None:
        """F, latent factors (FMF-LDP)."""
        return self.deployment.n_factors(self.config)

    @property
    def upload(self) -> type[Message]:
        """The message a client sends."""
        return self.deployment.upload(self.config)

    @property
    def forward(self) -> type[Message]:
        """The batch the proxy forwards to the server."""
        return self.deployment.forward(self.config)

    @property
    def value_bound(self) -> float | None:
        """The largest |value| a real-valued report can take (None for one-bit reports)."""
        return self.deployment.value_bound(self.config)

    def mechanism(self) -> Any:
        """The client's local mechanism, built as the system builds it (None: no noise)."""
        return self.deployment.mechanism(self.config)

    def upload_size(self) -> int:
        """Bytes of one client's message: the proxy's body limit."""
        return self.deployment.upload_size(self)

    def batch_bytes(self, senders: int) -> int:
        """Bytes of a forwarded batch of ``senders`` whole submissions."""
        return self.deployment.batch_bytes(self, senders)

    # -- JSON -----------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {"system": self.system, "family": self.family, "n_items": self.n_items,
                "rounds": self.rounds, "aggregator": self.aggregator,
                "upload": self.upload.__name__, "forward": self.forward.__name__,
                "config": self.config}

    @classmethod
    def from_json(cls, doc: Any) -> ProtocolInfo:
        """Parse a published description; :class:`DprecError` on anything malformed."""
        if not isinstance(doc, dict):
            raise DprecError("a protocol description must be a JSON object")
        try:
            info = cls(doc["system"], doc["n_items"], dict(doc["config"]),
                       doc.get("aggregator", "mean"))
        except (KeyError, TypeError, ValueError) as e:
            raise DprecError(f"malformed protocol description: {e!r}") from None
        return info

    def fingerprint(self) -> str:
        """Canonical JSON of the description (equal descriptions, equal strings)."""
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))


def check_upload(message: Message, info: ProtocolInfo) -> Message:
    """Refuse (:class:`MessageError`) a client message this protocol's client cannot send."""
    if type(message) is not info.upload:
        raise MessageError(f"{info.system} clients send {info.upload.__name__} messages, "
                           f"got {type(message).__name__}")
    info.deployment.check_upload(message, info)
    return message


def check_forwarded(message: Message, info: ProtocolInfo) -> Message:
    """Refuse (:class:`MessageError`) a forwarded batch this protocol's proxy cannot send."""
    if type(message) is not info.forward:
        raise MessageError(f"{info.system}'s proxy forwards {info.forward.__name__} batches, "
                           f"got {type(message).__name__}")
    info.deployment.check_forwarded(message, info)
    return message


_GENERATORS = ("PCG64", "PCG64DXSM")


def generator_to_json(rng: Any) -> dict[str, Any]:
    """The state of a simulation's generator as JSON (128-bit integers as decimal strings).

    A simulation over the services hands the server its generator at the start, so that
    the server role draws exactly what it draws in process (FMF-LDP's initial V).
    """
    import numpy as np

    if not isinstance(rng, np.random.Generator):
        raise DprecError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    st = rng.bit_generator.state
    if st.get("bit_generator") not in _GENERATORS:
        raise DprecError(f"only {', '.join(_GENERATORS)} generators travel, got "
                         f"{st.get('bit_generator')}")
    return {"bit_generator": st["bit_generator"], "state": str(st["state"]["state"]),
            "inc": str(st["state"]["inc"]), "has_uint32": int(st["has_uint32"]),
            "uinteger": int(st["uinteger"])}


def generator_from_json(doc: Any) -> Any:
    """Inverse of :func:`generator_to_json`; :class:`DprecError` on anything malformed."""
    import numpy as np

    if not isinstance(doc, dict):
        raise DprecError("a generator state must be a JSON object")
    kind = doc.get("bit_generator")
    if kind not in _GENERATORS:
        raise DprecError(f"bit_generator must be one of {', '.join(_GENERATORS)}, got {kind!r}")

    def uint(name: str, bits: int) -> int:
        v = doc.get(name)
        if isinstance(v, bool) or not isinstance(v, (str, int)) or not str(v).isdigit():
            raise DprecError(f"{name} must be a non-negative integer, got {v!r}")
        out = int(v)
        if out >= 1 << bits:
            raise DprecError(f"{name} must be < 2^{bits}, got {out}")
        return out

    bit_gen = getattr(np.random, kind)()
    bit_gen.state = {"bit_generator": kind,
                     "state": {"state": uint("state", 128), "inc": uint("inc", 128)},
                     "has_uint32": uint("has_uint32", 1), "uinteger": uint("uinteger", 32)}
    return np.random.Generator(bit_gen)
