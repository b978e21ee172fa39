"""``audit(NAME, ...)``: NAME is a mechanism or protocol of :func:`targets`, or a system.

A system is audited through the hook on its spec (:class:`~dprec.systems.audits.SystemAudit`):
the hook names the subject (one value of its local mechanism, a whole bit vector, a shuffled
report slot, a training run with canaries) and this module runs it; it knows no system. The
audit settings the hook declares are taken from ``params`` first; the rest go to the
system's config.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

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
from dprec.errors import DprecError, as_float
from dprec.mechanisms.bitflip import BitFlip
from dprec.mechanisms.laplace_rr import LaplaceRR
from dprec.mechanisms.numeric import BinaryMechanism, LaplaceMechanism, PiecewiseMechanism
from dprec.systems.audits import (
    AuditRequest,
    AuditSubject,
    BitVector,
    CanaryRun,
    ShuffledSlot,
    setting_integer,
)

if TYPE_CHECKING:
    from dprec.systems.spec import SystemSpec

__all__ = ["TARGETS", "Target", "audit", "auditable_systems", "run_subject", "targets"]

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
    value = as_float(raw, f"--param {key} must be a number, got {raw!r}", DprecError)
    if not math.isfinite(value):
        raise DprecError(f"--param {key} must be finite, got {raw!r}")
    return value


def _int(params: Params, key: str, default: int) -> int:
    return setting_integer(params, key, default)


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
]}
"""The mechanisms and protocols of no system (:func:`targets` adds the systems' own)."""


def _spec(name: str) -> SystemSpec:
    from dprec.systems.registry import spec
    return spec(name)


def _audited_specs() -> list[SystemSpec]:
    from dprec.systems.registry import SYSTEMS
    return [s for s in SYSTEMS.values() if s.audit is not None and s.audit.subject is not None]


def auditable_systems() -> tuple[str, ...]:
    """The registered systems with an audit hook, in the registry's order."""
    return tuple(s.name for s in _audited_specs())


def targets() -> dict[str, Target]:
    """:data:`TARGETS` and the protocol targets the systems' audit hooks name."""
    out = dict(TARGETS)
    for sp_ in _audited_specs():
        hook = sp_.audit
        assert hook is not None
        if hook.target is not None:
            out[hook.target] = Target(
                hook.target, "protocol", hook.default_level, hook.summary,  # type: ignore
                (*hook.settings, f"+ {sp_.name} config keys"),
                lambda e, p, s, name=sp_.name: _run_system(name, e, p, None, s))
    return out


def _system_config(name: str, epsilon: float | None, params: Params) -> object:
    from dprec.systems.registry import make_config
    values: dict[str, object] = dict(params)
    if epsilon is not None:
        if "epsilon" not in _spec(name).settable():
            raise DprecError(f"{name} has no epsilon; set its budgets with --param")
        values["epsilon"] = epsilon
    return make_config(name, values)


def _run_system(name: str, epsilon: float | None, params: Params, level: Level | None,
                s: AuditSettings) -> AuditResult:
    hook = _spec(name).audit
    if hook is None or hook.subject is None:
        raise DprecError(f"{name} cannot be audited; auditable systems: "
                         f"{', '.join(auditable_systems())}; mechanisms and protocols: "
                         f"{', '.join(targets())} (dprec audit --list)")
    own = {k: v for k, v in params.items() if k in hook.settings}
    rest = {k: v for k, v in params.items() if k not in hook.settings}
    request = AuditRequest(name, level, epsilon, own,
                           lambda defaults: _system_config(name, epsilon, {**defaults, **rest}))
    return run_subject(hook.subject(request), s)


_LOCAL_AUDITS: dict[type, Callable[[object, AuditSettings], AuditResult]] = {
    LaplaceRR: audit_laplace_rr, LaplaceMechanism: audit_laplace,  # type: ignore[dict-item]
    BinaryMechanism: audit_binary, PiecewiseMechanism: audit_piecewise,  # type: ignore
}
"""The event-level audit of each numeric local mechanism, by its type (or a base type)."""


def run_subject(subject: AuditSubject, s: AuditSettings) -> AuditResult:
    """Run the audit a system's hook names (:mod:`dprec.systems.audits`)."""
    if isinstance(subject, BitVector):
        return audit_dplcf_user(subject.mechanism, subject.n_items, s)
    if isinstance(subject, ShuffledSlot):
        return audit_shuffled_slot(subject.mechanism, subject.n_users, subject.delta, s)
    if isinstance(subject, CanaryRun):
        from dprec.audit.one_run import audit_one_run
        return audit_one_run(subject, alpha=s.alpha, seed=s.seed)
    mech = subject.mechanism
    if isinstance(mech, BitFlip):
        return audit_bitflip(mech, s, subject.claimed, subject.label)  # type: ignore[arg-type]
    run = next((_LOCAL_AUDITS[t] for t in type(mech).__mro__ if t in _LOCAL_AUDITS), None)
    if run is None:
        raise DprecError(f"no event-level audit of the {type(mech).__name__} mechanism")
    return run(mech, s)


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
        unknown = sorted(set(p) - set(t.params))
        if unknown:
            raise DprecError(f"{name} has no option {', '.join(unknown)}; its options: "
                             f"{', '.join(t.params) or 'none'}")
        return t.run(epsilon, p, s)
    system_targets = targets()
    if name in system_targets:
        t = system_targets[name]
        if level is not None and level != t.level:
            raise DprecError(f"{name} is a {t.level}-level audit, got --level {level}")
        return t.run(epsilon, p, s)
    from dprec.systems.registry import SYSTEMS
    if name not in SYSTEMS:
        raise DprecError(f"unknown audit target {name!r}; mechanisms and protocols: "
                         f"{', '.join(system_targets)}; systems: "
                         f"{', '.join(auditable_systems())}")
    return _run_system(name, epsilon, p, level, s)
