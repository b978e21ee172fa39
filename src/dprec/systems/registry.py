"""System names as used on the command line (lower-case paper names) and their factories."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

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
    return SYSTEMS[name](options or SystemOptions())
