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
import math
from dataclasses import dataclass, field
from typing import Any

from dprec.errors import DprecError
from dprec.mechanisms.bitflip import BitFlip
from dprec.mechanisms.numeric import BinaryMechanism, PiecewiseMechanism
from dprec.protocol.messages import (
    MAX_ITEMS,
    GradientReports,
    Message,
    MessageError,
    ObfuscatedBits,
    ShuffledReports,
    ShuffledValues,
    ValueReports,
)

__all__ = ["ProtocolInfo", "check_forwarded", "check_upload"]

FAMILIES = ("fmf", "dplcf")


def _family(config: dict[str, Any]) -> str:
    if "flip" in config and "estimator" in config:
        return "dplcf"
    if "k" in config and "mechanism" in config:
        return "fmf"
    raise DprecError("only the DPLCF family and FMF-LDP run as services; the config "
                     f"has fields {sorted(config)}")


@dataclass(frozen=True)
class ProtocolInfo:
    """The public description of a deployed protocol."""

    system: str
    """Registry name of the system, e.g. ``fmf-ldp`` or ``dplcf-sp``."""
    n_items: int
    """N, the number of items."""
    config: dict[str, Any]
    """The system's config (its dataclass as a dict)."""
    aggregator: str = "mean"
    """The server's aggregator (:mod:`dprec.protocol.aggregation`)."""
    family: str = field(init=False)
    """``fmf`` or ``dplcf``."""

    def __post_init__(self) -> None:
        if not isinstance(self.system, str) or not self.system:
            raise DprecError(f"system must be a name, got {self.system!r}")
        if isinstance(self.n_items, bool) or not isinstance(self.n_items, int) \
                or not 1 <= self.n_items <= MAX_ITEMS:
            raise DprecError(f"n_items must be an integer in [1, {MAX_ITEMS}], got "
                             f"{self.n_items!r}")
        if not isinstance(self.config, dict):
            raise DprecError("config must be a mapping")
        object.__setattr__(self, "family", _family(self.config))
        if self.family == "fmf":
            if self.config.get("exact"):
                raise DprecError("FCF (exact=true) sends whole gradients, not wire messages: "
                                 "it runs in process only")
            if self.config.get("mechanism") not in ("binary", "piecewise", "none"):
                raise DprecError(f"mechanism must be binary, piecewise or none, got "
                                 f"{self.config.get('mechanism')!r}")

    # -- what travels ---------------------------------------------------------------------

    @property
    def rounds(self) -> int:
        """Rounds (FMF-LDP epochs; DPLCF has one)."""
        return int(self.config["epochs"]) if self.family == "fmf" else 1

    @property
    def k(self) -> int | None:
        """Reports per client and round (FMF-LDP)."""
        return int(self.config["k"]) if self.family == "fmf" else None

    @property
    def n_factors(self) -> int | None:
        """F, latent factors (FMF-LDP)."""
        return int(self.config["factors"]) if self.family == "fmf" else None

    @property
    def upload(self) -> type[Message]:
        """The message a client sends."""
        if self.family == "dplcf":
            return ObfuscatedBits
        return GradientReports if self.config["mechanism"] == "binary" else ValueReports

    @property
    def forward(self) -> type[Message]:
        """The batch the proxy forwards to the server."""
        if self.family == "dplcf":
            return ObfuscatedBits
        return ShuffledReports if self.config["mechanism"] == "binary" else ShuffledValues

    @property
    def value_bound(self) -> float | None:
        """The largest |value| a real-valued report can take (None for one-bit reports)."""
        mech = self.mechanism()
        if isinstance(mech, PiecewiseMechanism):
            return mech.scale
        if self.family == "fmf" and mech is None:
            return 1.0  # the clipped gradient entry scaled into [-1, 1]
        return None

    def mechanism(self) -> BinaryMechanism | PiecewiseMechanism | BitFlip | None:
        """The client's local mechanism, built as the system builds it (None: no noise)."""
        c = self.config
        if self.family == "dplcf":
            return None if c["flip"] == "none" else getattr(BitFlip, c["flip"])(c["epsilon"])
        if c["mechanism"] == "binary":
            return BinaryMechanism(c["epsilon"])
        if c["mechanism"] == "piecewise":
            return PiecewiseMechanism(c["epsilon"])
        return None

    def upload_size(self) -> int:
        """Bytes of one client's message: the proxy's body limit."""
        if self.family == "dplcf":
            return 6 + 8 + (self.n_items + 7) // 8
        assert self.k is not None
        return self.upload.serialized_size(self.k)  # type: ignore[attr-defined]

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


def _check_reports(message: Any, info: ProtocolInfo, exact_k: bool) -> None:
    assert info.n_factors is not None and info.k is not None
    if exact_k and message.k != info.k:
        raise MessageError(f"a client message must hold k = {info.k} reports, got {message.k}")
    if message.k and int(message.items.max()) >= info.n_items:
        raise MessageError(f"item indices must be < n_items = {info.n_items}, got "
                           f"{int(message.items.max())}")
    if message.k and int(message.factors.max()) >= info.n_factors:
        raise MessageError(f"factor indices must be < factors = {info.n_factors}, got "
                           f"{int(message.factors.max())}")
    bound = info.value_bound
    if bound is not None and message.k:
        # float32 on the wire: allow the rounding of the bound itself
        limit = float(bound) * (1.0 + 1e-6)
        worst = float(abs(message.values).max())
        if not worst <= limit or not math.isfinite(worst):
            raise MessageError(f"report values must lie in [-{bound:.6g}, {bound:.6g}] (what "
                               f"the mechanism outputs), got |value| = {worst:.6g}")


def check_upload(message: Message, info: ProtocolInfo) -> Message:
    """Refuse (:class:`MessageError`) a client message this protocol's client cannot send."""
    if type(message) is not info.upload:
        raise MessageError(f"{info.system} clients send {info.upload.__name__} messages, "
                           f"got {type(message).__name__}")
    if isinstance(message, ObfuscatedBits):
        if message.n_clients != 1:
            raise MessageError(f"a client uploads one vector, got {message.n_clients}")
        if message.n_items != info.n_items:
            raise MessageError(f"an upload must have n_items = {info.n_items}, got "
                               f"{message.n_items}")
        return message
    _check_reports(message, info, exact_k=True)
    return message


def check_forwarded(message: Message, info: ProtocolInfo) -> Message:
    """Refuse (:class:`MessageError`) a forwarded batch this protocol's proxy cannot send."""
    if type(message) is not info.forward:
        raise MessageError(f"{info.system}'s proxy forwards {info.forward.__name__} batches, "
                           f"got {type(message).__name__}")
    if isinstance(message, ObfuscatedBits):
        if message.n_items != info.n_items:
            raise MessageError(f"a batch must have n_items = {info.n_items}, got "
                               f"{message.n_items}")
        if message.n_clients == 0:
            raise MessageError("a batch must hold at least one upload")
        return message
    if message.k == 0:  # type: ignore[attr-defined]
        raise MessageError("a batch must hold at least one report")
    _check_reports(message, info, exact_k=False)
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
