"""What a system declares to run as services: the abstract halves of a deployable system.

The services, the proxy, the transport, the client SDK and the sharded backend know no
system by name: they ask the descriptor of the protocol they run
(:class:`dprec.systems.deployable.ProtocolInfo`, looked up by the system's name in the one
registry, :mod:`dprec.systems.registry`). A descriptor lives in its system's folder, in two
halves so that a device never loads server code:

- ``systems/<name>/deploy.py``, ``DEPLOYMENT``: a :class:`Deployment` (the device-safe half:
  the upload and forward message types, the local mechanism, the checks on what arrives,
  the proxy's shuffle of a batch, the artefacts, the device's terms, client step, report
  cost and on-device scores). It imports only messages, mechanisms and the system's
  ``client`` module.
- ``systems/<name>/serve.py``, ``SERVING``: a :class:`Serving` (the server role, its memory,
  the broadcast codec and the artefacts made from it, the state a restart restores).
- ``systems/<name>/config.py``: the system's frozen config dataclass
  (:attr:`Deployment.config_class`), which a published protocol carries and every method
  here reads by attribute.

This module holds only the abstract classes (and the JSON form of a generator that a
simulation hands its server); the layers are drawn in docs/architecture.md.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from dprec.errors import DprecError
from dprec.protocol.messages import Message

if TYPE_CHECKING:
    from dprec.protocol.aggregation import Aggregator
    from dprec.protocol.engine import Server
    from dprec.protocol.sharding import SystemAdapter

__all__ = ["Deployment", "DeviceReader", "PublishedProtocol", "ProxySecrets", "SecretNotReady",
           "Serving", "generator_from_json", "generator_to_json"]


class PublishedProtocol(Protocol):
    """What a descriptor reads of a published protocol (the concrete description, found by
    the system's name in the registry, is :class:`dprec.systems.deployable.ProtocolInfo`)."""

    system: str
    n_items: int
    config: Any
    """The system's typed frozen config (its ``config.py``'s dataclass)."""
    aggregator: str

    @property
    def k(self) -> int | None: ...

    @property
    def n_factors(self) -> int | None: ...

    @property
    def upload(self) -> type[Message]: ...

    @property
    def forward(self) -> type[Message]: ...

    @property
    def value_bound(self) -> float | None: ...

    def mechanism(self) -> Any: ...

    def upload_size(self) -> int: ...

    def batch_bytes(self, senders: int) -> int: ...


class DeviceReader(ABC):
    """How the device reads a field of the typed config, named by the field (its errors are
    the device's: a malformed field is a bad reply, a size beyond the policy a policy
    violation)."""

    @abstractmethod
    def real(self, name: str, *, positive: bool) -> float:
        """The field ``name``, a finite number (> 0 with ``positive``, else >= 0)."""

    @abstractmethod
    def integer(self, name: str, limit: str | None, high: int = 1 << 31) -> int:
        """The field ``name``, an integer >= 1 and at most the policy field ``limit`` (or ``high``
        when ``limit`` is None)."""

    @abstractmethod
    def choice(self, name: str, allowed: tuple[str, ...]) -> str:
        """The field ``name``, one of ``allowed``."""

    @abstractmethod
    def limit(self, name: str) -> int:
        """The policy's value of the size limit ``name`` (``max_k``, ...)."""


class SecretNotReady(DprecError):
    """The proxy's secret part cannot serve yet: it waits for the operator's secret
    (``POST /v1/secret``). The proxy answers 503 (retry later) meanwhile."""


class ProxySecrets(ABC):
    """The part of a protocol that needs the proxy's own secret (a secure sum's proxy key:
    it opens the mask seeds). Made once per proxy from its state folder, so a restarted
    proxy holds the same key and can open what it acknowledged before."""

    @abstractmethod
    def published(self) -> dict[str, Any]:
        """What clients need from this proxy (JSON: its public key)."""

    @abstractmethod
    def admit(self, message: Message, round: int) -> None:
        """:class:`~dprec.protocol.messages.MessageError` for an upload of ``round`` this
        proxy cannot open (sealed to another key, tampered, of another round)."""

    @abstractmethod
    def release(self, rows: list[bytes], round: int, threshold: int) -> bytes:
        """The round's one forwarded batch of the held uploads ``rows`` (a function of their
        multiset and this proxy's CSPRNG only)."""

    agrees_release: bool = False
    """True: the round's release is agreed with the server first (a secure sum:
    :mod:`dprec.protocol.secure_sum.validity`). The proxy service then asks
    :meth:`release_bounds`, :meth:`message_id`, :meth:`verdicts` and :meth:`share_batch`,
    and calls :meth:`release` with exactly the agreed rows."""

    def release_bounds(self) -> tuple[int, int]:
        """``(min_honest, n_clients)`` of the protocol the server published: the fewest and
        the most uploads one release may sum."""
        raise DprecError("this protocol's release is not agreed with the server")

    def message_id(self, row: bytes) -> bytes:
        """The unique id of the held upload ``row``."""
        raise DprecError("this protocol's release is not agreed with the server")

    def verdicts(self, rows: list[bytes], round: int) -> dict[bytes, str | None]:
        """This proxy's verdict on each held upload of ``round`` by message id (None:
        valid, else why it is refused)."""
        raise DprecError("this protocol's release is not agreed with the server")

    def share_batch(self, rows: list[bytes], round: int) -> bytes:
        """What the server checks: the held uploads' server shares, without a mask sum."""
        raise DprecError("this protocol's release is not agreed with the server")

    def confirm(self, verdicts: dict[bytes, str | None], answer: Mapping[str, Any],
                round: int) -> dict[bytes, str | None]:
        """The server's ``verdicts`` after this proxy's own check of the server's whole
        ``answer`` (e.g. a validity proof's joint decision); it may only refuse more."""
        return verdicts

    needs_broadcast: bool = False
    """True: :meth:`admit` checks an upload against the round's broadcast, which the proxy
    hands to :meth:`see_broadcast` (fetched from the server) before the round's first one."""

    def see_broadcast(self, round: int, body: bytes) -> None:  # noqa: B027 - optional
        """The server's broadcast artefact clients of ``round`` compute from."""

    def adopt(self, doc: Mapping[str, Any]) -> None:
        """Take the operator's secret for this protocol (``POST /v1/secret``);
        :class:`DprecError` if this protocol takes none or holds another."""
        raise DprecError("this protocol's proxy takes no operator secret")

    def client_secret(self, client_id: int) -> dict[str, Any]:
        """What this proxy hands the authenticated client ``client_id`` alone (JSON; e.g.
        FMF-LDP's cells token); :class:`DprecError` if this protocol hands clients none."""
        raise DprecError("this protocol's proxy hands clients no secret")


class Deployment(ABC):
    """The device-safe half of a deployable system (see the module docstring)."""

    name: str
    """The family key (``dplcf``, ``fmf``), the name of the system's folder: what a device
    policy names mechanisms under and what a published protocol names as its family."""
    noisy: tuple[str, ...]
    """The config's mechanisms that add noise (``none`` is the only other value)."""
    default_mechanisms: frozenset[str]
    """The mechanisms a default device policy accepts."""
    artefacts: tuple[str, ...]
    """The artefacts the server publishes."""
    broadcast_artefact: str
    """The artefact that holds the broadcast losslessly (what a simulation reads back)."""
    device_randomness: bool = False
    """True: nothing outside a client may determine its noise or sampling, even in a
    simulation over the services: the server starts from its own CSPRNG (never the
    simulation's generator) and the simulated clients draw as devices, each from its own
    CSPRNG (:attr:`~dprec.services.transport.HttpTransport.device_clients`). False: the
    services replay the simulation's seeded stream, bit for bit."""
    exact_upload: bool = True
    """False: an upload's size depends on the client's data (the terms' ``message_bytes`` is
    its largest)."""
    one_batch: bool = False
    """True: the proxy forwards ONE batch per round, at its close, and the server takes one
    (a secure sum: every batch the server can tell apart reveals its own sum)."""

    config_class: type
    """The frozen config dataclass of the family's systems (``systems/<name>/config.py``, which
    imports no server code): a published description's config is decoded into it."""

    # -- the protocol -----------------------------------------------------------------------

    def config_type(self, system: str) -> type:
        """The config class of the family's system ``system`` (by default
        :attr:`config_class`; a family whose systems differ in config overrides this)."""
        return self.config_class

    def validate(self, config: Any) -> None:  # noqa: B027 - optional
        """:class:`DprecError` for a config of this system that cannot run as services."""

    def rounds(self, config: Any) -> int:
        """Rounds of the protocol."""
        return 1

    def published_threshold(self, config: Any) -> int | None:
        """The anonymity threshold the protocol publishes: the distinct senders the
        shuffling proxy needs before it forwards a round (None: the protocol states none)."""
        return None

    def k(self, config: Any) -> int | None:
        """Reports per client and round (None: one whole message)."""
        return None

    def n_factors(self, config: Any) -> int | None:
        """Latent factors of the broadcast (None: no factors)."""
        return None

    @abstractmethod
    def upload(self, config: Any) -> type[Message]:
        """The message a client sends."""

    @abstractmethod
    def forward(self, config: Any) -> type[Message]:
        """The batch the proxy forwards."""

    @abstractmethod
    def mechanism(self, config: Any) -> Any:
        """The client's local mechanism, built as the system builds it (None: no noise)."""

    def value_bound(self, config: Any) -> float | None:
        """The largest |value| of a real-valued report (None: no real values)."""
        return None

    @abstractmethod
    def upload_size(self, info: PublishedProtocol) -> int:
        """Bytes of one client's message."""

    @abstractmethod
    def batch_bytes(self, info: PublishedProtocol, senders: int) -> int:
        """Bytes of a forwarded batch of ``senders`` whole submissions."""

    @abstractmethod
    def check_upload(self, message: Message, info: PublishedProtocol) -> None:
        """:class:`MessageError` for a client message this protocol's client cannot send
        (its type is already checked)."""

    @abstractmethod
    def check_forwarded(self, message: Message, info: PublishedProtocol) -> None:
        """:class:`MessageError` for a batch this protocol's proxy cannot send (its type is
        already checked)."""

    @abstractmethod
    def shuffle(self, rows: list[bytes], info: PublishedProtocol, rng: np.random.Generator,
                threshold: int) -> bytes:
        """One forwarded batch of the held submissions ``rows``, depending only on their
        multiset (canonical order, then a uniform permutation from ``rng``)."""

    def anonymous(self, message: Message, body: bytes) -> bytes:
        """What the proxy holds of an accepted upload: the body without the sender."""
        return body

    def unique_id(self, message: Message) -> bytes | None:
        """An id no two accepted uploads of a round may share (a replay of another client's
        upload is refused); None: no such id."""
        return None

    def proxy_secrets(self, info: PublishedProtocol, state_dir: Path) -> ProxySecrets | None:
        """The proxy's secret part of the protocol, kept in ``state_dir`` (None: the proxy
        only relays and shuffles)."""
        return None

    @abstractmethod
    def client_messages(self, message: Any, first_id: int) -> Iterator[tuple[int, bytes]]:
        """(client id, wire bytes) of every client a simulation message stands for."""

    # -- the device -------------------------------------------------------------------------

    @abstractmethod
    def terms(self, read: DeviceReader, info: PublishedProtocol) -> dict[str, Any]:
        """The device's terms of ``info`` (the fields of
        :class:`~dprec.client.policy.ProtocolTerms` but system, family and n_items)."""

    @abstractmethod
    def build_mechanism(self, mechanism: str, epsilon: float | None) -> Any:
        """The local mechanism named in the device's terms (``none`` is never built)."""

    @abstractmethod
    def client_step(self, terms: Any, history: Any, round: int, rng: np.random.Generator,
                    client_id: int, artefact: Callable[[], Any]) -> bytes | None:
        """One client's message of ``round`` (``artefact()`` fetches the device's one); None:
        this client takes no part in the round (e.g. the server did not select it), so
        nothing is charged, stored or sent."""

    def with_side_features(self, terms: Any, features: Any) -> Any:
        """``terms`` with the user's own side features (``DeviceClient.report(...,
        features=)``), checked; :class:`DprecError` for features this protocol does not take
        or cannot use (the default: it takes none), or none where it needs them."""
        if features is not None:
            raise DprecError(f"{terms.system} takes no side features: call report / scores "
                             "without features=")
        return terms

    def needs_client_secret(self, terms: Any) -> bool:
        """True: :meth:`client_step` needs what the proxy hands this client alone
        (:meth:`ProxySecrets.client_secret`); the device fetches it before its step."""
        return False

    def with_client_secret(self, terms: Any, doc: Mapping[str, Any]) -> Any:
        """``terms`` with the proxy's ``doc`` for this client, checked
        (:class:`DprecError` on anything malformed)."""
        raise DprecError("this protocol's proxy hands clients no secret")

    @abstractmethod
    def decode_artefact(self, terms: Any, body: bytes) -> Any:
        """The device's artefact, checked against its terms."""

    @abstractmethod
    def scores(self, terms: Any, history: Any, artefact: Any) -> np.ndarray:
        """Every item's score for one user, computed on the device."""


class Serving(ABC):
    """The server half of a deployable system: its role, memory and broadcast."""

    role_type: type
    """The class of its server role (what the sharded backend recognises a run by)."""
    shard_adapter: type[SystemAdapter] | None = None
    """Its sharded-run adapter (``systems/<name>/shard.py``, or the secure sums'
    :class:`~dprec.protocol.sharding.IntegerSumAdapter`; None: no sharded run)."""
    aggregators: Mapping[str, type[Aggregator]] | None = None
    """The aggregators its server takes by name (``--aggregator``; its own defences among
    them); None: the plain mean only."""
    trusted_aggregator: bool = False
    """True if its server role sees individual contributions in the clear (central DP with a
    trusted aggregator, or no DP); the role says so in its description too."""

    @abstractmethod
    def server_role(self, info: PublishedProtocol, aggregator: Aggregator) -> Server:
        """The server role, constructed as the system constructs it in ``fit``."""

    @abstractmethod
    def role_memory(self, info: PublishedProtocol) -> tuple[int, int, str]:
        """(bytes of the state, bytes at the peak of a round, what the state is)."""

    @abstractmethod
    def encode_broadcast(self, info: PublishedProtocol, broadcast: Any, version: int) -> bytes:
        """The role's broadcast as the bytes the store keeps (lossless)."""

    @abstractmethod
    def decode_broadcast(self, info: PublishedProtocol, body: bytes) -> Any:
        """Inverse of :meth:`encode_broadcast`."""

    def encode_state(self, info: PublishedProtocol, role: Any, broadcast: Any,
                     version: int) -> bytes:
        """What the store keeps after the role published ``broadcast``: by default the
        broadcast itself; a role whose next rounds need more (its own generator) keeps that
        too, and :meth:`artefact_bytes` publishes only the broadcast of it."""
        return self.encode_broadcast(info, broadcast, version)

    def initial_state(self, local: Any) -> bytes | None:
        """What the simulation's role ``local`` starts from that the public description does
        not give (an initial model, the enrolled clients), sent with the start; None: none."""
        return None

    def initialise(self, info: PublishedProtocol, role: Any, body: bytes) -> None:
        """Give a fresh role the :meth:`initial_state` ``body`` before its start."""
        raise DprecError(f"{info.system}'s server takes no initial state at its start")

    def artefact_bytes(self, info: PublishedProtocol, name: str, body: bytes) -> bytes:
        """Artefact ``name`` made from the stored broadcast ``body``."""
        return body

    def restore(self, info: PublishedProtocol, role: Any, body: bytes | None) -> None:  # noqa: B027
        """Give a fresh role the state it had after publishing ``body``."""

    def diagnostics(self, role: Any) -> dict[str, Any]:
        """What the role measured in its last round (published with the round; JSON)."""
        return {}

    def mirror(self, local: Any, diagnostics: dict[str, Any]) -> None:  # noqa: B027
        """Give the simulation's own (unused) role what the remote role measured."""

    def service_params(self, local: Any) -> dict[str, str]:
        """Parameters a server started for a simulation needs beyond the simulation's own,
        read off the simulation's role ``local`` (what the data fixes: sizes, a scale)."""
        return {}


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
