"""System names as used on the command line (lower-case paper names) and their factories."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, is_dataclass, replace

from dprec.errors import DprecError
from dprec.mechanisms.bitflip import BitFlip
from dprec.systems.base import Recommender
from dprec.systems.baselines import Popularity, RandomScorer
from dprec.systems.central import TrainedOnObfuscated
from dprec.systems.dplcf import LocalItemCF, LocalItemCFConfig


@dataclass(frozen=True)
class SystemOptions:
    """Run options shared by the CLI and the comparison; each system reads what it needs."""

    epsilon: float | None = None
    """None = each system's paper default (DPLCF 1.0, FMF-LDP 2.5)."""
    neighbours: int = 20
    neighbourhood: str = "item"
    k: int = 100
    """FMF-LDP reports per client per epoch."""
    epochs: int = 20
    """Federated epochs (FCF, FMF-LDP)."""
    mechanism: str = "binary"
    """FMF-LDP value mechanism: binary or piecewise."""
    lr: float | None = None
    """Server learning rate of FCF / FMF-LDP (None = the paper's 1e-3)."""
    overrides: tuple[tuple[str, str], ...] = ()
    """(field, value) pairs set on the system's config, e.g. ("factors", "10")."""

    def eps(self, default: float) -> float:
        return default if self.epsilon is None else self.epsilon


def _lcf(name: str, flip: str, estimator: str) -> Callable[[SystemOptions], Recommender]:
    def make(o: SystemOptions) -> Recommender:
        return LocalItemCF(name, LocalItemCFConfig(
            flip=flip, estimator=estimator, epsilon=o.eps(1.0),  # type: ignore[arg-type]
            neighbours=o.neighbours, neighbourhood=o.neighbourhood))  # type: ignore[arg-type]
    return make


def _bpr(o: SystemOptions) -> Recommender:
    from dprec.models.bpr import BPRMF, BPRConfig
    return TrainedOnObfuscated("bpr-mf", BPRMF(BPRConfig()), BitFlip.symmetric(o.eps(1.0)),
                               epsilon=o.eps(1.0))


def _mf_np(o: SystemOptions) -> Recommender:
    from dprec.models.als import ALSConfig, ImplicitALS
    return TrainedOnObfuscated("mf-np", ImplicitALS(ALSConfig()), None)


def _fmf(name: str, exact: bool) -> Callable[[SystemOptions], Recommender]:
    def make(o: SystemOptions) -> Recommender:
        from dprec.systems.fmf import FederatedMF, FMFConfig
        extra = {} if o.lr is None else {"lr": o.lr}
        return FederatedMF(name, FMFConfig(exact=exact, epsilon=o.eps(2.5), k=o.k,
                                           epochs=o.epochs, mechanism=o.mechanism,  # type: ignore[arg-type]
                                           **extra))
    return make


SYSTEMS: dict[str, Callable[[SystemOptions], Recommender]] = {
    "random": lambda o: RandomScorer(),
    "popularity": lambda o: Popularity(),
    "lcf-ub": _lcf("lcf-ub", "none", "naive"),
    "lcf-sp": _lcf("lcf-sp", "symmetric", "naive"),
    "lcf-ap": _lcf("lcf-ap", "asymmetric", "naive"),
    "dplcf-sp": _lcf("dplcf-sp", "symmetric", "unbiased"),
    "dplcf-ap": _lcf("dplcf-ap", "asymmetric", "unbiased"),
    "dplcf-oue": _lcf("dplcf-oue", "oue", "unbiased"),
    "dplcf-eb": _lcf("dplcf-eb", "symmetric", "eb"),
    "bpr-mf": _bpr,
    "mf-np": _mf_np,
    "fcf": _fmf("fcf", exact=True),
    "fmf-ldp": _fmf("fmf-ldp", exact=False),
}

PRIVATE_SYSTEMS = ("lcf-sp", "lcf-ap", "dplcf-sp", "dplcf-ap", "dplcf-oue", "dplcf-eb", "bpr-mf",
                   "fmf-ldp")


def make_system(name: str, options: SystemOptions | None = None) -> Recommender:
    """A fresh, unfitted system by its command-line name."""
    if name not in SYSTEMS:
        raise DprecError(f"unknown system {name!r}; known systems: {', '.join(SYSTEMS)}")
    options = options or SystemOptions()
    return _with_overrides(SYSTEMS[name](options), dict(options.overrides))


def _coerce(name: str, text: str, current: object) -> object:
    try:
        if isinstance(current, bool):
            if text.lower() not in ("true", "false", "1", "0"):
                raise ValueError(text)
            return text.lower() in ("true", "1")
        if isinstance(current, int):
            return int(text)
        if isinstance(current, float) or current is None:
            return None if text.lower() == "none" else float(text)
        return text
    except ValueError:
        raise DprecError(f"parameter {name} must be a {type(current).__name__}, got {text!r}") \
            from None


def _with_overrides(system: Recommender, overrides: dict[str, str]) -> Recommender:
    """Rebuild ``system`` with ``overrides`` applied to its (or its model's) config."""
    if not overrides:
        return system
    owner = system.model if isinstance(system, TrainedOnObfuscated) else system
    cfg = getattr(owner, "config", None)
    if cfg is None or not is_dataclass(cfg):
        raise DprecError(f"{system.name} has no parameters to set")
    known = [f.name for f in fields(cfg)]
    unknown = sorted(set(overrides) - set(known))
    if unknown:
        raise DprecError(f"unknown parameter(s) {', '.join(unknown)} for {system.name}; "
                         f"known: {', '.join(known)}")
    new = replace(cfg, **{k: _coerce(k, v, getattr(cfg, k)) for k, v in overrides.items()})
    if isinstance(system, TrainedOnObfuscated):
        system.model = type(system.model)(new)
        return system
    return type(system)(system.name, new)  # type: ignore[call-arg]
