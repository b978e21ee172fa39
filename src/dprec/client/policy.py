"""The device's own policy: which protocols, mechanisms, noise levels and sizes it accepts.

The server is untrusted, so what leaves a device is decided on the device. A
:class:`DevicePolicy` is the user's (a constructor argument or a TOML/JSON file, never read
from a server) and is checked against the server's published description before a byte is
computed:

- :meth:`DevicePolicy.read` turns the description into :class:`ProtocolTerms`, the typed
  values the device computes with. It refuses (:class:`~dprec.client.errors.BadReply`) a
  config field of the wrong type or range, and (:class:`~dprec.client.errors.PolicyViolation`)
  a protocol larger than the policy allows: N items, FMF-LDP's k reports and F factors,
  DPLCF's K neighbours, the message one report sends and the artefact the device downloads.
  These bound the device's memory, compute and upload whatever the server says.
- :meth:`DevicePolicy.cost` is asked before a report: the mechanism must be one the policy
  accepts for the family (never ``none``: that uploads the raw history), one randomised value
  (a DPLCF bit, one of FMF-LDP's k reports) must cost at most ``max_epsilon_per_report``
  and the whole message at most ``max_epsilon_per_round``. It returns the message's epsilon,
  what the ledger charges: ``count x eps`` by basic composition (N bits or k reports; pure
  epsilon, user level, replace-one: any history against any other). For DPLCF-SP and OUE this
  is exact for pure epsilon: the worst pair of N-bit vectors differs in every bit, each in
  the direction of the larger per-bit ratio.
- A report in the clear to a server the protocol declares a trusted aggregator (the terms'
  ``trusted_aggregator``: PrivRec's model update) is refused unless ``trust_aggregator``
  is set; with it :meth:`DevicePolicy.cost` charges the aggregator's Gaussian release the
  report enters (its noise multiplier and delta from the config), and the ledger notes that
  the guarantee rests on that server (:meth:`DevicePolicy.trust_note`).
"""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

from dprec.client.errors import BadReply, PolicyViolation
from dprec.errors import DprecError
from dprec.privacy.ledger import PrivacyLedger
from dprec.protocol.deployment import DeviceReader
from dprec.protocol.messages import MAX_ITEMS
from dprec.systems.deployable import ProtocolInfo, deployments, family_deployment

__all__ = ["DEFAULT_MECHANISMS", "DevicePolicy", "ProtocolTerms"]

NOISY = MappingProxyType({d.name: d.noisy for d in deployments()})
"""The mechanisms that add noise, per family (``none`` is the only other value), as each
deployable system's descriptor declares them."""
DEFAULT_MECHANISMS = MappingProxyType({d.name: d.default_mechanisms for d in deployments()})
"""Accepted by default, per descriptor: the two-sided ones. DPLCF's asymmetric flip (p = 1)
protects presence only (an uploaded 0 proves an absence), so a policy must name it to accept
it."""
_MAX_WIRE_FACTORS = 255


@dataclass(frozen=True)
class ProtocolTerms:
    """A published protocol as the device reads it: typed, checked, within the policy."""

    system: str
    family: str
    """The descriptor's name (``dplcf``, ``fmf``)."""
    n_items: int
    rounds: int
    mechanism: str
    """The mechanism's name (``none``, ``symmetric``, ``oue``, ``binary``, ...)."""
    epsilon: float | None
    """The config's epsilon (None with no mechanism)."""
    count: int
    """Randomised values in one message: N bits (DPLCF) or k reports (FMF-LDP)."""
    message_bytes: int
    """Bytes of the one message a report sends."""
    artefact: str
    """The artefact the device ranks with (``neighbours`` or ``item-matrix``)."""
    artefact_bytes: int
    """Its exact size, implied by N and the config."""
    artefact_what: str
    factors: int = 0
    k: int = 0
    alpha: float = 0.0
    regularization: float = 0.0
    clip: float = 0.0
    neighbours: int = 0
    neighbourhood: str = ""
    cells: str = "chosen"
    """FMF-LDP's cell rule: ``chosen`` (the device draws its k cells) or ``assigned`` (the
    family's device half derives them from the broadcast and the device's token)."""
    cells_token: bytes = b""
    """``cells=assigned``: the device's own token, fetched from the proxy by
    :class:`~dprec.client.device.DeviceClient` (never part of the server's description)."""
    secure_sum: bool = False
    """A secure-sum system (dp-pop, dpals, dp-fedavg): one sealed upload per round, the
    run's epsilon charged once per run (:meth:`DevicePolicy.cost`)."""
    delta: float = 0.0
    n_clients: int = 0
    """The clients enrolled (a secure sum's; within ``max_clients``)."""
    min_honest: int = 0
    """The honest clients each share relies on (within ``max_min_honest``): every client
    adds ``Sk(mu / min_honest)``."""
    round_bytes: tuple[int, ...] = ()
    """A secure sum's exact upload size per round (empty: every round ``message_bytes``)."""
    artefact_exact: bool = True
    """False: the artefact's size changes within the run (at most ``artefact_bytes``)."""
    settings: Any = field(default=None, hash=False, compare=False)
    """A secure sum's typed frozen config as published and read under the policy (an LDP
    rating system's own values it computes with)."""
    proxy_key: bytes = b""
    """A secure sum's proxy key, fetched from the proxy by
    :class:`~dprec.client.device.DeviceClient` (never part of the server's description)."""
    proxy_published: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    """What the proxy publishes (``GET /v1/round``), e.g. the validity check it verifies;
    the device compares it with what it computes itself, never adopts it."""
    trusted_aggregator: bool = False
    """The report leaves the device in the clear, without local noise, to a server that must
    be trusted with it (PrivRec's model update): :meth:`DevicePolicy.cost` refuses it unless
    the policy sets ``trust_aggregator``."""
    noise_multiplier: float = 0.0
    """A trusted aggregator's Gaussian noise per report, as a multiple of one user's l2
    sensitivity (z; 0: it adds none, no DP)."""
    side_features: Any = field(default=None, hash=False, compare=False)
    """The user's own side features, checked by the descriptor
    (:meth:`~dprec.protocol.deployment.Deployment.with_side_features`; never sent)."""

    def upload_bytes(self, round: int) -> int:
        """The exact size of round ``round``'s message."""
        return self.round_bytes[round] if self.round_bytes else self.message_bytes

    def build_mechanism(self) -> Any:
        """The local mechanism (None for ``none``); :class:`BadReply` if its epsilon is
        unusable (the mechanism's own check)."""
        if self.mechanism == "none":
            return None
        try:
            return family_deployment(self.family).build_mechanism(self.mechanism, self.epsilon)
        except DprecError as e:
            raise BadReply(f"the protocol's {self.mechanism} mechanism: {e}") from None


def _real(config: Any, name: str, *, positive: bool) -> float:
    value = getattr(config, name, None)
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value < 0 or (positive and value == 0):
        rule = "> 0" if positive else ">= 0"
        raise BadReply(f"the protocol's config.{name} must be a finite number {rule}, got "
                       f"{value!r}")
    return float(value)


def _integer(config: Any, name: str, high: int, limit: str | None) -> int:
    """The config's field ``name``, an integer in [1, high]: above ``high`` a
    :class:`PolicyViolation` of the policy field ``limit`` (a :class:`BadReply` without
    one)."""
    value = getattr(config, name, None)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1 \
            or (limit is None and value > high):
        rule = ">= 1" if limit is not None else f"in [1, {high}]"
        raise BadReply(f"the protocol's config.{name} must be an integer {rule}, got {value!r}")
    if value > high:
        raise PolicyViolation(f"the protocol's config.{name} = {value} is more than the device "
                              f"policy's {limit} = {high}")
    return value


def _choice(config: Any, name: str, allowed: tuple[str, ...]) -> str:
    value = getattr(config, name, None)
    if value not in allowed:
        raise BadReply(f"the protocol's config.{name} must be one of {', '.join(allowed)}, got "
                       f"{value!r}")
    return str(value)


class _Reader(DeviceReader):
    """A typed config read by a device under ``policy``, field by field: malformed is a
    :class:`BadReply`, beyond the policy a :class:`PolicyViolation`."""

    def __init__(self, policy: DevicePolicy, config: Any) -> None:
        self.policy, self.config = policy, config

    def real(self, name: str, *, positive: bool) -> float:
        return _real(self.config, name, positive=positive)

    def integer(self, name: str, limit: str | None, high: int = 1 << 31) -> int:
        if limit is not None:
            high = min(self.limit(limit), high)
        return _integer(self.config, name, high, limit)

    def choice(self, name: str, allowed: tuple[str, ...]) -> str:
        return _choice(self.config, name, allowed)

    def limit(self, name: str) -> int:
        value = getattr(self.policy, name)
        assert isinstance(value, int)
        return value


@dataclass(frozen=True)
class DevicePolicy:
    """What this device accepts; the defaults are safe. Never read from a server."""

    mechanisms: Mapping[str, frozenset[str]] = field(
        default_factory=lambda: dict(DEFAULT_MECHANISMS), hash=False)
    """Accepted mechanisms per family: ``dplcf`` (symmetric, asymmetric, oue) and ``fmf``
    (binary, piecewise). A family left out is refused; ``none`` can never be accepted."""
    max_epsilon_per_report: float = 5.0
    """Largest epsilon of one randomised value (a DPLCF bit, one FMF-LDP report): the least
    noise the device adds."""
    max_epsilon_per_round: float = math.inf
    """Largest epsilon of one round's message (count x eps); inf: only the budget bounds it."""
    max_items: int = 100_000
    """Largest N (a DPLCF message is N bits; FMF-LDP's V has N rows)."""
    max_k: int = 1_000
    """Largest k, FMF-LDP's reports per round."""
    max_factors: int = 64
    """Largest F, FMF-LDP's latent factors."""
    max_neighbours: int = 1_000
    """Largest K, DPLCF's neighbour-list length."""
    max_message_bytes: int = 1 << 20
    """Largest message one report sends."""
    max_artefact_bytes: int = 64 << 20
    """Largest artefact the device downloads (FMF-LDP's V, DPLCF's neighbour lists)."""
    max_clients: int = 10_000_000
    """Largest ``n_clients`` of a secure sum (with ``min_honest`` unset, every client's
    share is ``Sk(mu / n_clients)``: an inflated count shrinks it)."""
    max_min_honest: int = 100_000
    """Largest ``min_honest`` of a secure sum: each client adds ``Sk(mu / min_honest)``, so
    the guarantee needs that many honest clients; a server claiming more is refused."""
    max_delta: float = 1e-5
    """Largest delta of a secure sum's (epsilon, delta) guarantee: the whole delta the run
    holds at, a truncated noise share's cost included (dp-pop with ``validity=prio3``:
    ``delta + (1 + e^epsilon) n (eta + eta_2)``, computed by the device from the config)."""
    trust_aggregator: bool = False
    """Send a report that leaves in the clear, without local DP, to a server the protocol
    declares a trusted aggregator (PrivRec's update; DP-PrivRec's noise is that server's).
    False (the default): refused. True: sent, and the ledger records with each such charge
    that the guarantee rests on that server being trusted (:meth:`DevicePolicy.cost`)."""
    accept_no_dp: bool = False
    """Also send a trusted aggregator's report that no one adds noise to (plain PrivRec: no
    DP guarantee at all, epsilon infinite). False (the default): refused even with
    ``trust_aggregator``. True: sent, charged 0, and the ledger's note says that no guarantee
    holds."""

    def __post_init__(self) -> None:
        if not isinstance(self.mechanisms, Mapping):
            raise DprecError(f"mechanisms must map a family to mechanism names, got "
                             f"{type(self.mechanisms).__name__}")
        accepted: dict[str, frozenset[str]] = {}
        for family, names in self.mechanisms.items():
            if family not in NOISY:
                raise DprecError(f"mechanisms: unknown family {family!r}; known: "
                                 f"{', '.join(NOISY)}")
            if isinstance(names, str) or not all(isinstance(n, str) for n in names):
                raise DprecError(f"mechanisms.{family} must be a list of names, got {names!r}")
            bad = sorted(set(names) - set(NOISY[family]))
            if bad:
                raise DprecError(f"mechanisms.{family}: {', '.join(map(repr, bad))} refused; a "
                                 f"device accepts only mechanisms that add noise: "
                                 f"{', '.join(NOISY[family])} (none uploads the raw data)")
            accepted[family] = frozenset(names)
        object.__setattr__(self, "mechanisms", MappingProxyType(accepted))
        if not isinstance(self.accept_no_dp, bool):
            raise DprecError(f"accept_no_dp must be true or false, got {self.accept_no_dp!r}")
        if not isinstance(self.trust_aggregator, bool):
            raise DprecError(f"trust_aggregator must be true or false, got "
                             f"{self.trust_aggregator!r}")
        if isinstance(self.max_delta, bool) or not isinstance(self.max_delta, (int, float)) \
                or not 0 < self.max_delta < 1:
            raise DprecError(f"max_delta must be a number in (0, 1), got {self.max_delta!r}")
        for name in ("max_epsilon_per_report", "max_epsilon_per_round"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not value > 0 or math.isnan(value):
                raise DprecError(f"{name} must be a number > 0, got {value!r}")
        if not math.isfinite(self.max_epsilon_per_report):
            raise DprecError("max_epsilon_per_report must be finite (it is the least noise "
                             "the device adds)")
        for name, high in (("max_items", MAX_ITEMS), ("max_k", 1 << 32),
                           ("max_factors", _MAX_WIRE_FACTORS), ("max_neighbours", MAX_ITEMS),
                           ("max_message_bytes", 1 << 40), ("max_artefact_bytes", 1 << 40),
                           ("max_clients", 1 << 40), ("max_min_honest", 1 << 40)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
                raise DprecError(f"{name} must be an integer in [1, {high}], got {value!r}")

    # -- files ------------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> DevicePolicy:
        """A policy from a mapping of its fields (unknown fields refused; a missing one takes
        its default; ``max_epsilon_per_round = null`` is inf)."""
        if not isinstance(doc, Mapping):
            raise DprecError(f"a device policy must be a table/object, got {type(doc).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(doc) - known)
        if unknown:
            raise DprecError(f"unknown device policy field(s) {', '.join(unknown)}; known: "
                             f"{', '.join(sorted(known))}")
        kwargs = dict(doc)
        if kwargs.get("max_epsilon_per_round", 0) is None:
            kwargs["max_epsilon_per_round"] = math.inf
        return cls(**kwargs)

    @classmethod
    def load(cls, path: Path | str) -> DevicePolicy:
        """A policy from a ``.toml`` or ``.json`` file."""
        path = Path(path)
        try:
            text = path.read_text()
            if path.suffix == ".toml":
                doc = tomllib.loads(text)
            elif path.suffix == ".json":
                doc = json.loads(text, parse_constant=_no_constant)
            else:
                raise DprecError(f"a device policy file must be .toml or .json, got {path.name}")
        except (OSError, UnicodeDecodeError, ValueError) as e:
            if isinstance(e, DprecError):
                raise
            raise DprecError(f"cannot read the device policy {path}: {e}") from None
        return cls.from_dict(doc)

    def to_dict(self) -> dict[str, Any]:
        """The policy as strict JSON (inf as null)."""
        out: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        out["mechanisms"] = {k: sorted(v) for k, v in self.mechanisms.items()}
        if math.isinf(self.max_epsilon_per_round):
            out["max_epsilon_per_round"] = None
        return out

    # -- checks -----------------------------------------------------------------------------

    def read(self, info: ProtocolInfo) -> ProtocolTerms:
        """The typed terms of ``info``; :class:`BadReply` for a malformed config,
        :class:`PolicyViolation` for a protocol beyond this policy's sizes. Computes
        nothing else."""
        c = info.config
        n = info.n_items
        if n > self.max_items:
            raise PolicyViolation(f"the protocol has n_items = {n}, more than the device "
                                  f"policy's max_items = {self.max_items}")
        try:
            fields_ = info.deployment.terms(_Reader(self, c), info)
        except (BadReply, PolicyViolation):
            raise
        except DprecError as e:  # the descriptor's own check of the config
            raise BadReply(str(e)) from None
        terms = ProtocolTerms(info.system, info.family, n, **fields_)
        if terms.message_bytes > self.max_message_bytes:
            raise PolicyViolation(f"one report of {info.system} sends {terms.message_bytes} "
                                  f"bytes, more than the device policy's max_message_bytes = "
                                  f"{self.max_message_bytes}")
        if terms.artefact_bytes > self.max_artefact_bytes:
            raise PolicyViolation(f"{info.system}'s {terms.artefact} artefact "
                                  f"({terms.artefact_what}) is {terms.artefact_bytes} bytes, "
                                  "more than the device policy's max_artefact_bytes = "
                                  f"{self.max_artefact_bytes}")
        return terms

    def cost(self, terms: ProtocolTerms, earlier: int = 0) -> float:
        """The epsilon one message of ``terms`` costs, if the policy accepts its mechanism
        and noise; :class:`PolicyViolation` otherwise (before anything is computed).
        ``earlier``: the reports of this run charged before (a trusted aggregator's charge
        grows with them: :meth:`_trusted_cost`)."""
        if terms.trusted_aggregator:
            return self._trusted_cost(terms, earlier)
        accepted = self.mechanisms.get(terms.family, frozenset())
        if terms.secure_sum and terms.mechanism in accepted:
            return self._secure_sum_cost(terms)
        if terms.mechanism not in accepted:
            allowed = ", ".join(sorted(accepted)) or "nothing"
            raise PolicyViolation(f"{terms.system} uses the {terms.family} mechanism "
                                  f"{terms.mechanism!r}; the device policy accepts {allowed} "
                                  f"for {terms.family}" + (" (none uploads the raw data)"
                                                           if terms.mechanism == "none" else ""))
        mechanism = terms.build_mechanism()
        assert mechanism is not None
        event = mechanism.dp_event()
        one = PrivacyLedger.cost(event, 1)
        if not one <= self.max_epsilon_per_report:
            raise PolicyViolation(f"one randomised value of {terms.system} costs epsilon "
                                  f"{one:.6g}, more than the device policy's "
                                  f"max_epsilon_per_report = {self.max_epsilon_per_report:g}")
        total = PrivacyLedger.cost(event, terms.count)
        if not 0 < total <= self.max_epsilon_per_round:
            raise PolicyViolation(f"one message of {terms.system} ({terms.count} values) costs "
                                  f"epsilon {total:.6g}, outside the device policy's "
                                  f"(0, max_epsilon_per_round = "
                                  f"{self.max_epsilon_per_round:g}]")
        return total


    def _trusted_cost(self, terms: ProtocolTerms, earlier: int) -> float:
        """A report in the clear to a trusted aggregator: refused without
        ``trust_aggregator``. With it, the charge of the device's ``earlier + 1``-th report
        of the run is eps(earlier + 1) - eps(earlier), eps(k) the epsilon at the run's delta
        of k Gaussian releases with noise multiplier z (RDP, alpha / (2 z^2) each, Mironov
        2017; improved conversion): the device's own account of the releases its data
        entered, with no amplification by the server's sampling. It holds against everyone
        who sees the released models, not against the aggregator. z = 0 (no noise, no DP):
        refused unless ``accept_no_dp`` too; then charged 0, and the ledger's note says that
        no guarantee holds."""
        if not self.trust_aggregator:
            raise PolicyViolation(
                f"{terms.system} sends its report in the clear, without local DP, to the "
                "server as a trusted aggregator; the device policy refuses this unless it "
                "sets trust_aggregator = true (the guarantee then rests on that server)")
        z = terms.noise_multiplier
        if z == 0:
            if not self.accept_no_dp:
                raise PolicyViolation(
                    f"{terms.system} adds no noise anywhere: its report carries no DP "
                    "guarantee (epsilon infinite); the device policy refuses it unless it "
                    "also sets accept_no_dp = true")
            return 0.0
        if not 0 < terms.delta <= self.max_delta:
            raise PolicyViolation(f"{terms.system} guarantees delta {terms.delta!r}, outside "
                                  f"the device policy's (0, max_delta = {self.max_delta:g}]")
        from dprec.privacy.gaussian import gaussian_rdp_epsilon

        def eps(k: int) -> float:
            return gaussian_rdp_epsilon(z, 1.0, k, terms.delta)

        one, step = eps(1), eps(earlier + 1) - eps(earlier)
        if not one <= self.max_epsilon_per_report:
            raise PolicyViolation(f"one report of {terms.system} costs epsilon {one:.6g} "
                                  f"(Gaussian, z = {z:.4g}), more than the device policy's "
                                  f"max_epsilon_per_report = {self.max_epsilon_per_report:g}")
        if not step <= self.max_epsilon_per_round:
            raise PolicyViolation(f"report {earlier + 1} of {terms.system}'s run costs "
                                  f"epsilon {step:.6g}, more than the device policy's "
                                  f"max_epsilon_per_round = {self.max_epsilon_per_round:g}")
        return max(step, 0.0)

    @staticmethod
    def trust_note(terms: ProtocolTerms) -> str:
        """What the ledger records beside a trusted aggregator's charge."""
        if terms.noise_multiplier == 0:
            return (f"{terms.system}: update sent in the clear to a trusted aggregator that "
                    "adds no noise: no DP guarantee (epsilon inf against anyone who sees "
                    "the released model); charged 0")
        return (f"{terms.system}: update sent in the clear to a trusted aggregator; the "
                f"charge (Gaussian, z = {terms.noise_multiplier:.6g}, delta = "
                f"{terms.delta:g}) holds only if that server is trusted, and never against it")

    def _secure_sum_cost(self, terms: ProtocolTerms) -> float:
        """A secure sum's charge: its run's epsilon (the central guarantee, every round of
        the run together), charged once per run; :class:`PolicyViolation` for an epsilon
        or delta beyond the policy, or too many clients behind each noise share."""
        eps = terms.epsilon
        if eps is None or not 0 < eps <= min(self.max_epsilon_per_report,
                                             self.max_epsilon_per_round):
            raise PolicyViolation(f"{terms.system} guarantees epsilon {eps!r} per run, outside "
                                  f"the device policy's (0, min(max_epsilon_per_report = "
                                  f"{self.max_epsilon_per_report:g}, max_epsilon_per_round = "
                                  f"{self.max_epsilon_per_round:g})]")
        if not 0 < terms.delta <= self.max_delta:
            raise PolicyViolation(f"{terms.system} guarantees delta {terms.delta!r}, outside "
                                  f"the device policy's (0, max_delta = {self.max_delta:g}]")
        if not 1 <= terms.min_honest <= min(terms.n_clients, self.max_min_honest) \
                or terms.n_clients > self.max_clients:
            raise PolicyViolation(f"{terms.system} has min_honest = {terms.min_honest} of "
                                  f"n_clients = {terms.n_clients}; the device policy accepts "
                                  f"min_honest in [1, min(n_clients, max_min_honest = "
                                  f"{self.max_min_honest})] and n_clients <= max_clients = "
                                  f"{self.max_clients} (each share is Sk(mu / min_honest))")
        return float(eps)


def _no_constant(name: str) -> float:
    raise DprecError(f"a device policy must be strict JSON, got {name}")
