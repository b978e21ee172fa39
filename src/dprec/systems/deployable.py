"""The deployable systems, found by name in the one registry, and the protocol they publish.

A system runs as services when its :class:`~dprec.systems.spec.SystemSpec` names its package
(``deploy="dprec.systems.dplcf"``): that package's ``deploy`` module holds the device-safe
descriptor ``DEPLOYMENT``, its ``serve`` module the server half ``SERVING``
(:mod:`dprec.protocol.deployment`) and its ``config`` module the systems' frozen configs.
The halves are imported only when asked, so a device, which finds its descriptor by the
published family (the package's folder name) among the registered packages, loads neither
a server half nor any system's in-process code.

:class:`ProtocolInfo` is the public description the server serves at ``GET /v1/protocol``:
the system (``fmf-ldp``, ``dplcf-sp``, ...), the item count, the aggregator and the system's
typed frozen config (all of it public; on the wire the JSON object of its fields, decoded
strictly by :func:`~dprec.systems.config_json.config_from_json`). The proxy reads it to
check submissions, a device to build its client step, the simulation to check that the
server runs the configuration it simulates. The checks refuse what the mechanism cannot
output (docs/architecture.md, "hostile input"): a message of the wrong type, an index out
of range, a value outside the mechanism's output range, a message with the wrong number of
reports or items.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
from dataclasses import dataclass, field, fields
from functools import cache
from types import SimpleNamespace
from typing import Any

from dprec.errors import DprecError
from dprec.protocol.deployment import Deployment, Serving
from dprec.protocol.messages import MAX_ITEMS, Message, MessageError
from dprec.systems.config_json import config_from_json, config_to_json

__all__ = ["ProtocolInfo", "check_forwarded", "check_upload", "demo_system", "deployable_packages",
           "deployable_systems", "deployment", "deployments", "family_deployment", "serving",
           "serving_of", "sharded_systems"]


def deployable_packages() -> tuple[str, ...]:
    """The registered packages with a ``deploy`` module, in the registry's order (found
    without importing any system's code: a device calls this)."""
    from dprec.systems.registry import SPEC_MODULES
    out = []
    for module in SPEC_MODULES:
        package, _, leaf = module.rpartition(".")
        if leaf == "specs" and importlib.util.find_spec(f"{package}.deploy") is not None:
            out.append(package)
    return tuple(out)


def deployable_systems() -> tuple[str, ...]:
    """The names of the registered systems that run as services, in the registry's order:
    their spec names a deploy package whose descriptor takes the system's default config
    (with the sizes a simulation states, None there, read as 1; FCF's exact gradients and
    PrivRec's central training are refused)."""
    from dprec.systems.registry import SYSTEMS
    out = []
    for name, s in SYSTEMS.items():
        if s.deploy is None:
            continue
        config = s.default_config()
        sized = SimpleNamespace(**{f.name: 1 if getattr(config, f.name) is None
                                   else getattr(config, f.name) for f in fields(config)})
        try:
            deployment(name).validate(sized)
        except DprecError:
            continue
        out.append(name)
    return tuple(out)


def sharded_systems() -> tuple[str, ...]:
    """The deployable systems whose server half names a shard adapter: those
    ``dprec run --backend local|ray`` runs in shards (loads the server halves)."""
    return tuple(n for n in deployable_systems() if serving(n).shard_adapter is not None)


@cache
def _load(package: str, module: str, name: str) -> Any:
    return getattr(importlib.import_module(f"{package}.{module}"), name)


def _package(system: str) -> str:
    from dprec.systems.registry import spec
    package = spec(system).deploy
    if package is None:
        raise DprecError(f"{system} runs in process only; the systems that run as services: "
                         f"{', '.join(deployable_systems())}")
    return package


def demo_system() -> Any:
    """The module of the system the browser demo runs (``dprec serve demo``):
    :mod:`dprec.systems.dp_pop.demo` (its ``SYSTEM`` name, ``check_settings``,
    ``page_round``, ``released``)."""
    return importlib.import_module("dprec.systems.dp_pop.demo")


def deployment(system: str) -> Deployment:
    """The device-safe descriptor of the registered system ``system`` (by its name)."""
    found = _load(_package(system), "deploy", "DEPLOYMENT")
    assert isinstance(found, Deployment)
    return found


def serving(system: str) -> Serving:
    """The server half of the registered system ``system`` (never on a device)."""
    found = _load(_package(system), "serve", "SERVING")
    assert isinstance(found, Serving)
    return found


def family_deployment(family: str) -> Deployment:
    """The descriptor of the registered package whose folder is ``family`` (what a published
    protocol names as its family); :class:`DprecError` for any other name."""
    by_family = {p.rpartition(".")[2]: p for p in deployable_packages()}
    if not isinstance(family, str) or family not in by_family:
        raise DprecError(f"family must be one of {', '.join(by_family)}, got {family!r}")
    found = _load(by_family[family], "deploy", "DEPLOYMENT")
    assert isinstance(found, Deployment) and found.name == family
    return found


def deployments() -> tuple[Deployment, ...]:
    """Every registered descriptor, in the registry's order (device-safe)."""
    return tuple(_load(p, "deploy", "DEPLOYMENT") for p in deployable_packages())


def serving_of(role: Any) -> Serving | None:
    """The server half whose role ``role`` is, the one with the most specific role type
    (dp-fedavg's server is an FCF server); None: no deployable system's."""
    mro = type(role).__mro__
    halves = [_load(p, "serve", "SERVING") for p in deployable_packages()]
    matching = [s for s in halves if isinstance(role, s.role_type)]
    return min(matching, key=lambda s: mro.index(s.role_type)) if matching else None


@dataclass(frozen=True)
class ProtocolInfo:
    """The public description of a deployed protocol; what differs between systems is
    asked of its :attr:`deployment`, found by :attr:`system`'s name in the registry (or, as
    a device reads a published description, by its family)."""

    system: str
    """Registry name of the system, e.g. ``fmf-ldp`` or ``dplcf-sp``."""
    n_items: int
    """N, the number of items."""
    config: Any
    """The system's typed frozen config: an instance of exactly the class its descriptor's
    :meth:`~dprec.protocol.deployment.Deployment.config_type` names (:meth:`from_json`
    decodes a published description's JSON object into it)."""
    aggregator: str = "mean"
    """The server's aggregator (:mod:`dprec.protocol.aggregation`)."""
    published_family: str | None = field(default=None, repr=False, compare=False)
    """The family a published description names (a device finds the descriptor by it,
    without the registry's system code); None: find it by :attr:`system`."""
    deployment: Deployment = field(init=False, repr=False, compare=False)
    """The descriptor of the system."""

    def __post_init__(self) -> None:
        if not isinstance(self.system, str) or not self.system:
            raise DprecError(f"system must be a name, got {self.system!r}")
        if isinstance(self.n_items, bool) or not isinstance(self.n_items, int) \
                or not 1 <= self.n_items <= MAX_ITEMS:
            raise DprecError(f"n_items must be an integer in [1, {MAX_ITEMS}], got "
                             f"{self.n_items!r}")
        found = (deployment(self.system) if self.published_family is None
                 else family_deployment(self.published_family))
        cls = found.config_type(self.system)
        if type(self.config) is not cls:
            raise DprecError(f"{self.system}'s config must be a {cls.__name__}, got "
                             f"{type(self.config).__name__}")
        found.validate(self.config)
        object.__setattr__(self, "deployment", found)

    @property
    def family(self) -> str:
        """The descriptor's name (``fmf``, ``dplcf``): what a device policy keys
        mechanisms by."""
        return self.deployment.name

    def serving(self) -> Serving:
        """The system's server half (never on a device)."""
        return serving(self.system)

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
                "config": config_to_json(self.config)}

    @classmethod
    def from_json(cls, doc: Any) -> ProtocolInfo:
        """Parse a published description (its descriptor found by its ``family``, its config
        decoded strictly into the system's config class:
        :func:`~dprec.systems.config_json.config_from_json`); :class:`DprecError` on
        anything malformed."""
        if not isinstance(doc, dict):
            raise DprecError("a protocol description must be a JSON object")
        try:
            family, system = doc["family"], doc["system"]
            if not isinstance(system, str):
                raise DprecError(f"system must be a name, got {system!r}")
            if not isinstance(doc["config"], dict):
                raise DprecError("a protocol description's config must be a JSON object")
            config = config_from_json(family_deployment(family).config_type(system),
                                      doc["config"])
            info = cls(system, doc["n_items"], config, doc.get("aggregator", "mean"),
                       published_family=family)
        except DprecError:
            raise
        except (KeyError, TypeError, ValueError) as e:
            raise DprecError(f"malformed protocol description: {e!r}") from None
        return info

    def fingerprint(self) -> str:
        """Canonical JSON of the description (equal descriptions, equal strings)."""
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))


def check_upload(message: Message, info: ProtocolInfo) -> Message:
    """Refuse (:class:`MessageError`) a client message this protocol's client cannot send."""
    _check_type(message, info.upload, f"{info.system} clients send", "messages")
    info.deployment.check_upload(message, info)
    return message


def check_forwarded(message: Message, info: ProtocolInfo) -> Message:
    """Refuse (:class:`MessageError`) a forwarded batch this protocol's proxy cannot send."""
    _check_type(message, info.forward, f"{info.system}'s proxy forwards", "batches")
    info.deployment.check_forwarded(message, info)
    return message


def _check_type(message: Message, expected: type, who: str, what: str) -> None:
    if type(message) is not expected:
        raise MessageError(f"{who} {expected.__name__} {what}, got {type(message).__name__}")
