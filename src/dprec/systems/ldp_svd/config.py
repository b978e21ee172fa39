"""The local-DP rating systems' frozen configs and their validation, importable by a device
without the systems' in-process or server code (the published protocol carries them:
:class:`~dprec.systems.deployable.ProtocolInfo`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Literal

from dprec.errors import DprecError
from dprec.mechanisms.laplace_rr import LaplaceRR
from dprec.mechanisms.numeric import BinaryMechanism, LaplaceMechanism, PiecewiseMechanism
from dprec.models.funk_svd import FunkSVDConfig
from dprec.privacy.guarantee import Guarantee
from dprec.systems.ldp_svd.client import RatingMechanism
from dprec.systems.ldp_svd.messages import Scale

__all__ = ["LDPSVDConfig", "LaplaceRRSVDConfig", "Mechanism", "SVDConfig", "SVDFields"]

Mechanism = Literal["laplace", "duchi", "piecewise"]


def _check_eps(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            math.isfinite(value) and value > 0):
        raise DprecError(f"{name} must be a finite number > 0, got {value!r}")



@dataclass(frozen=True)
class SVDFields(FunkSVDConfig):
    """The server's Funk SVD (:class:`FunkSVDConfig`'s fields and defaults, Surprise's
    ``SVD``) and the simulation settings."""

    noise_weighting: bool = True
    """Server weights every report by w = 1/(1 + 16 s^2), s^2 = the mechanism's noise variance
    on [0, 1] (lr w, reg / w; server.py); False = Funk SVD exactly as set (the paper)."""
    rating_min: float | None = None
    """Public rating scale, low end (None: the data set's declared scale; never the
    training ratings' minimum, which is private)."""
    rating_max: float | None = None
    """Public rating scale, high end (None: the data set's declared scale)."""
    batch_size: int = 1024
    """Clients simulated per vectorised batch."""
    n_users: int | None = None
    """Rows of the server's model, the users enrolled (None: the training matrix's rows). A
    server run as a service is told it (``dprec simulate`` passes the data's); ``fit``
    refuses a training matrix with another count."""

    def __post_init__(self) -> None:
        self.svd_config()
        if not isinstance(self.noise_weighting, bool):
            raise DprecError(f"noise_weighting must be True or False, "
                             f"got {self.noise_weighting!r}")
        if (self.rating_min is None) != (self.rating_max is None):
            raise DprecError("rating_min and rating_max must be given together, got "
                             f"rating_min={self.rating_min}, rating_max={self.rating_max}")
        if self.rating_min is not None:
            Scale(self.rating_min, self.rating_max)  # type: ignore[arg-type]
        b = self.batch_size
        if isinstance(b, bool) or int(b) != b or b < 1:
            raise DprecError(f"batch_size must be an integer >= 1, got {b!r}")
        m = self.n_users
        if m is not None and (isinstance(m, bool) or not isinstance(m, int) or m < 1):
            raise DprecError(f"n_users must be an integer >= 1 or unset, got {m!r}")

    def svd_config(self) -> FunkSVDConfig:
        """The server model's :class:`FunkSVDConfig` (validates the SVD fields)."""
        names = {f.name for f in fields(FunkSVDConfig)}
        return FunkSVDConfig(**{k: getattr(self, k) for k in names})



@dataclass(frozen=True)
class LDPSVDConfig(SVDFields):
    """An honest eps-LDP mechanism per rating, then Funk SVD (laplace-svd fixes Laplace)."""

    mechanism: Mechanism = "laplace"
    """Per-rating mechanism: laplace (x + Lap(1/eps) on [0, 1]), duchi, piecewise."""
    epsilon: float = 1.0
    """Total budget per rating (laplace-svd: the paper's eps1)."""
    hide_items: bool = False
    """Also report each unrated item with probability fake_rate (value: the scale midpoint)."""
    fake_rate: float = 0.0625
    """q, the probability that an unrated item gets a fake report (hide_items only); the
    default is about ML-100K's density, so about as many fakes as ratings."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.mechanism not in ("laplace", "duchi", "piecewise"):
            raise DprecError(f"mechanism must be laplace, duchi or piecewise, "
                             f"got {self.mechanism!r}")
        _check_eps("epsilon", self.epsilon)
        if not isinstance(self.hide_items, bool):
            raise DprecError(f"hide_items must be True or False, got {self.hide_items!r}")
        q = self.fake_rate
        if isinstance(q, bool) or not isinstance(q, int | float) or not 0 < q <= 1:
            raise DprecError(f"fake_rate must be in (0, 1], got {q!r}")

    def build_mechanism(self) -> RatingMechanism:
        if self.mechanism == "laplace":
            return LaplaceMechanism(self.epsilon)
        if self.mechanism == "duchi":
            return BinaryMechanism(self.epsilon, name="duchi")
        return PiecewiseMechanism(self.epsilon)

    def claimed(self) -> Guarantee | None:
        """Seed 001's claim for its Laplace-SVD baseline (eps-LDP per rating); None otherwise."""
        if self.mechanism != "laplace":
            return None
        return Guarantee(self.epsilon, level="event", sides="two", model="local",
                         mechanism=f"laplace(eps={self.epsilon:.6g})",
                         notes=("as published (seed 001): Laplace-SVD is eps1-LDP per rating",))



@dataclass(frozen=True)
class LaplaceRRSVDConfig(SVDFields):
    """Laplace-RR-SVD as published (seed 001): Laplace step eps1, "randomized response" eps2."""

    eps1: float = 1.0
    """Budget of the Laplace step: noise Lap(1/eps1) on the [0, 1] scale."""
    eps2: float = 1.0
    """The paper's budget of the "randomized response" step: the true rating is reported with
    probability e^eps2/(1 + e^eps2). Claimed total eps1 + eps2; true guarantee: none."""

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_eps("eps1", self.eps1)
        _check_eps("eps2", self.eps2)

    @property
    def hide_items(self) -> bool:
        return False

    def build_mechanism(self) -> LaplaceRR:
        return LaplaceRR(self.eps1, self.eps2)

    def claimed(self) -> Guarantee:
        return self.build_mechanism().claimed()



SVDConfig = LDPSVDConfig | LaplaceRRSVDConfig
