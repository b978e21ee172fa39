"""``audit(NAME, ...)``: NAME is a mechanism or protocol of :data:`TARGETS`, or a system.

A system audits its local mechanism at the given level: the DPLCF family its bit flip (event:
one bit; user: the whole N-bit vector), FMF-LDP its shuffled report slot (event), the rating
systems their per-rating mechanism (event), dp-privrec its training run at user level (the
one-run canary audit). Audit settings the system config does not have are taken from
``params`` first (:data:`AUDIT_PARAMS`); the rest go to the system's config.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from dprec.audit.mechanisms import (
    AuditSettings,
    audit_binary,
    audit_bitflip,
    audit_gaussian,
    audit_laplace,
    audit_laplace_rr,
    audit_oue_replace,
    audit_piecewise,
    audit_skellam,
)
from dprec.audit.protocols import audit_dplcf_user, audit_shuffled_slot
from dprec.audit.result import AuditResult, Level
from dprec.errors import DprecError
from dprec.mechanisms.bitflip import BitFlip
from dprec.mechanisms.laplace_rr import LaplaceRR
from dprec.mechanisms.numeric import BinaryMechanism, LaplaceMechanism, PiecewiseMechanism

__all__ = ["AUDIT_PARAMS", "TARGETS", "Target", "audit", "auditable_systems"]

Params = Mapping[str, str]


@dataclass(frozen=True)
class Target:
    """A mechanism or protocol ``dprec audit --list`` shows."""

    name: str
    kind: str
    level: Level
    summary: str
    params: tuple[str, ...]
    run: Callable[[float | None, Params, AuditSettings], AuditResult]


def _float(params: Params, key: str, default: float) -> float:
    raw = params.get(key)
    if raw is None:
        return default
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise DprecError(f"--param {key} must be a number, got {raw!r}") from None
    if not math.isfinite(value):
        raise DprecError(f"--param {key} must be finite, got {raw!r}")
    return value


def _int(params: Params, key: str, default: int) -> int:
    raw = params.get(key)
    if raw is None:
        return default
    try:
        return int(str(raw).strip())
    except ValueError:
        raise DprecError(f"--param {key} must be an integer, got {raw!r}") from None


def _eps(epsilon: float | None) -> float:
    return 1.0 if epsilon is None else float(epsilon)


def _no_epsilon(name: str, epsilon: float | None, how: str) -> None:
    if epsilon is not None:
        raise DprecError(f"{name} has no single epsilon; set {how}")


def _gaussian(eps: float | None, p: Params, s: AuditSettings) -> AuditResult:
    _no_epsilon("gaussian", eps, "--param noise_multiplier=Z --param delta=D")
    return audit_gaussian(_float(p, "noise_multiplier", 1.0), _float(p, "delta", 1e-5), s)


def _laplace_rr(eps: float | None, p: Params, s: AuditSettings) -> AuditResult:
    _no_epsilon("laplace-rr", eps, "--param eps1=... --param eps2=...")
    return audit_laplace_rr(LaplaceRR(_float(p, "eps1", 1.0), _float(p, "eps2", 1.0)), s)


def _shuffle(eps: float | None, p: Params, s: AuditSettings) -> AuditResult:
    return audit_shuffled_slot(BinaryMechanism(2.5 if eps is None else eps),
                               _int(p, "n_users", 943), _float(p, "delta", 1e-6), s)


def _dplcf_user(eps: float | None, p: Params, s: AuditSettings) -> AuditResult:
    flip = p.get("flip", "symmetric")
    if flip not in ("symmetric", "asymmetric", "oue"):
        raise DprecError(f"--param flip must be symmetric, asymmetric or oue, got {flip!r}")
    e = _eps(eps)
    return audit_dplcf_user(getattr(BitFlip, flip)(e), _int(p, "n_items", 1682), s, claimed=None)


def _skellam(eps: float | None, p: Params, s: AuditSettings) -> AuditResult:
    delta = _float(p, "delta", 1e-3)
    if eps is not None and "mu" in p:
        raise DprecError("skellam: give --epsilon (mu calibrated by the accountant) or "
                         "--param mu, not both")
    k = _int(p, "k", 1)
    statistic = p.get("statistic", "sum")
    if statistic not in ("sum", "llr"):
        raise DprecError(f"--param statistic must be sum or llr, got {statistic!r}")
    if eps is None:
        return audit_skellam(_float(p, "mu", 10.0), delta, s, k, statistic)  # type: ignore
    from dprec.privacy.skellam import calibrate_skellam_mu
    mu = calibrate_skellam_mu(eps, delta, float(k), math.sqrt(k), unit_shifts=k)
    return audit_skellam(mu, delta, s, k, statistic)  # type: ignore[arg-type]


def _secure_sum_run(eps: float | None, p: Params, s: AuditSettings) -> AuditResult:
    from dprec.audit.runs import audit_secure_sum_run, load_run
    if eps is not None:
        raise DprecError("skellam-run takes no --epsilon: its claim is the eps the run reports")
    if "run" not in p:
        raise DprecError("skellam-run needs --param run=PATH, a dp-pop or dpals run's JSON")
    return audit_secure_sum_run(load_run(p["run"]), s)


def _privrec(eps: float | None, p: Params, s: AuditSettings) -> AuditResult:
    return _run_privrec("dp-privrec", p, s, eps)


TARGETS: dict[str, Target] = {t.name: t for t in [
    Target("bitflip-sp", "mechanism", "event", "DPLCF symmetric flip, one bit", (),
           lambda e, p, s: audit_bitflip(BitFlip.symmetric(_eps(e)), s, _eps(e), "bitflip-sp")),
    Target("bitflip-ap", "mechanism", "event", "DPLCF asymmetric flip (p = 1), one bit", (),
           lambda e, p, s: audit_bitflip(BitFlip.asymmetric(_eps(e)), s, _eps(e), "bitflip-ap")),
    Target("bitflip-oue", "mechanism", "event", "optimised unary encoding, one bit", (),
           lambda e, p, s: audit_bitflip(BitFlip.oue(_eps(e)), s, _eps(e), "bitflip-oue")),
    Target("oue-replace", "mechanism", "event",
           "optimised unary encoding, one value replaced (Wang et al.'s unit)", (),
           lambda e, p, s: audit_oue_replace(BitFlip.oue(_eps(e)), s, _eps(e))),
    Target("binary", "mechanism", "event", "Duchi et al.'s one-bit report (FMF-LDP)", (),
           lambda e, p, s: audit_binary(BinaryMechanism(_eps(e)), s)),
    Target("piecewise", "mechanism", "event", "Wang et al.'s piecewise mechanism", (),
           lambda e, p, s: audit_piecewise(PiecewiseMechanism(_eps(e)), s)),
    Target("laplace", "mechanism", "event", "Laplace on [0, 1]", (),
           lambda e, p, s: audit_laplace(LaplaceMechanism(_eps(e)), s)),
    Target("laplace-rr", "mechanism", "event", "Laplace-RR as published (seed 001)",
           ("eps1", "eps2"), _laplace_rr),
    Target("gaussian", "mechanism", "event", "Gaussian noise on a sensitivity-1 query",
           ("noise_multiplier", "delta"), _gaussian),
    Target("skellam", "mechanism", "event",
           "Skellam noise on a k-hot vector (k = 1: one count), user present vs absent "
           "(dp-pop)", ("mu", "delta", "k", "statistic"),
           _skellam),
    Target("skellam-run", "protocol", "user",
           "a dp-pop / dpals run's JSON: the noise its clients draw vs the eps it reports",
           ("run",), _secure_sum_run),
    Target("shuffle-binary", "protocol", "event",
           "FMF-LDP: one shuffled report slot of n binary reports", ("n_users", "delta"),
           _shuffle),
    Target("dplcf-user", "protocol", "user",
           "DPLCF: a user's whole obfuscated N-bit vector, all ones vs all zeros",
           ("n_items", "flip"), _dplcf_user),
    Target("dp-privrec-canaries", "protocol", "user",
           "DP-PrivRec: one training run with canary clients (Steinke et al. 2023)",
           ("canaries", "guesses", "support", "dataset", "+ dp-privrec config keys"),
           _privrec),
]}

AUDIT_PARAMS = ("n_items", "n_users", "canaries", "guesses", "support", "dataset")
"""Audit settings accepted with a system NAME (not fields of the system's config)."""

_FLIP_SYSTEMS = ("dplcf-sp", "dplcf-ap", "dplcf-oue", "dplcf-eb", "lcf-sp", "lcf-ap")
_RATING_SYSTEMS = ("laplace-svd", "laplace-rr-svd", "ldp-svd")


def auditable_systems() -> tuple[str, ...]:
    return (*_FLIP_SYSTEMS, "fmf-ldp", *_RATING_SYSTEMS, "dp-privrec")


def _split(params: Params) -> tuple[dict[str, str], dict[str, str]]:
    own = {k: v for k, v in params.items() if k in AUDIT_PARAMS}
    rest = {k: v for k, v in params.items() if k not in AUDIT_PARAMS}
    return own, rest


def _system_config(name: str, epsilon: float | None, params: Params) -> object:
    from dprec.systems.registry import make_config, spec
    values: dict[str, object] = dict(params)
    if epsilon is not None:
        if "epsilon" not in spec(name).settable():
            raise DprecError(f"{name} has no epsilon; set its budgets with --param")
        values["epsilon"] = epsilon
    return make_config(name, values)


def _run_system(name: str, epsilon: float | None, params: Params, level: Level,
                s: AuditSettings) -> AuditResult:
    own, rest = _split(params)
    if name == "dp-privrec":
        if level != "user":
            raise DprecError("dp-privrec is audited at user level (central DP over a whole "
                             "user's update): use --level user")
        return _run_privrec(name, params, s, epsilon)
    cfg = _system_config(name, epsilon, rest)
    if name in _FLIP_SYSTEMS:
        mech = cfg.mechanism()  # type: ignore[attr-defined]
        eps = cfg.epsilon  # type: ignore[attr-defined]
        if level == "user":
            return audit_dplcf_user(mech, _int(own, "n_items", 1682), s)
        return audit_bitflip(mech, s, eps, name)
    if name == "fmf-ldp":
        if level != "event":
            raise DprecError("fmf-ldp is audited per report slot (--level event); its user "
                             "level composes k x epochs shuffles and is not audited")
        if cfg.mechanism != "binary":  # type: ignore[attr-defined]
            raise DprecError("the shuffled-slot audit counts +1 reports: it needs "
                             "mechanism=binary")
        return audit_shuffled_slot(BinaryMechanism(cfg.epsilon),  # type: ignore[attr-defined]
                                   _int(own, "n_users", 943), cfg.delta, s)  # type: ignore
    if name in _RATING_SYSTEMS:
        if level != "event":
            raise DprecError(f"{name} is audited per rating (--level event)")
        mech = cfg.build_mechanism()  # type: ignore[attr-defined]
        if isinstance(mech, LaplaceRR):
            return audit_laplace_rr(mech, s)
        if isinstance(mech, LaplaceMechanism):
            return audit_laplace(mech, s)
        if isinstance(mech, BinaryMechanism):
            return audit_binary(mech, s)
        return audit_piecewise(mech, s)
    raise DprecError(f"{name} cannot be audited; auditable systems: "
                     f"{', '.join(auditable_systems())}; mechanisms and protocols: "
                     f"{', '.join(TARGETS)} (dprec audit --list)")


def _run_privrec(name: str, params: Params, s: AuditSettings,
                 epsilon: float | None) -> AuditResult:
    from dprec.audit.one_run import DEFAULT_GUESSES, audit_privrec_one_run
    from dprec.data.features import side_features
    from dprec.data.registry import load_dataset
    if epsilon is not None:
        raise DprecError("dp-privrec has no epsilon setting: its eps follows from "
                         "--param noise_multiplier, clients_per_round and rounds")
    own, rest = _split(params)
    rest = {"rounds": "100", "clients_per_round": "100", **rest}
    cfg = _system_config("dp-privrec", None, rest)
    dataset = own.get("dataset", "ml-100k")
    ds = load_dataset(dataset)
    guesses = (tuple(int(g) for g in own["guesses"].split("/")) if "guesses" in own
               else DEFAULT_GUESSES)
    return audit_privrec_one_run(
        cfg, ds.matrix, side_features(ds),  # type: ignore[arg-type]
        canaries=_int(own, "canaries", 1000), alpha=s.alpha, seed=s.seed, guesses=guesses,
        support=_int(own, "support", 64), dataset=dataset)


def audit(name: str, *, epsilon: float | None = None, params: Params | None = None,
          level: Level | None = None, settings: AuditSettings | None = None) -> AuditResult:
    """Audit the mechanism, protocol or system ``name`` (see the module docstring)."""
    s = settings or AuditSettings()
    p = dict(params or {})
    if level is not None and level not in ("event", "user"):
        raise DprecError(f"level must be event or user, got {level!r}")
    if epsilon is not None and not (math.isfinite(epsilon) and epsilon > 0):
        raise DprecError(f"epsilon must be a finite number > 0, got {epsilon}")
    if name in TARGETS:
        t = TARGETS[name]
        if level is not None and level != t.level:
            raise DprecError(f"{name} is a {t.level}-level audit, got --level {level}")
        if t.name != "dp-privrec-canaries":
            unknown = sorted(set(p) - set(t.params))
            if unknown:
                raise DprecError(f"{name} has no option {', '.join(unknown)}; its options: "
                                 f"{', '.join(t.params) or 'none'}")
        return t.run(epsilon, p, s)
    from dprec.systems.registry import SYSTEMS
    if name not in SYSTEMS:
        raise DprecError(f"unknown audit target {name!r}; mechanisms and protocols: "
                         f"{', '.join(TARGETS)}; systems: {', '.join(auditable_systems())}")
    default_level: Level = "user" if name == "dp-privrec" else "event"
    return _run_system(name, epsilon, p, level or default_level, s)
