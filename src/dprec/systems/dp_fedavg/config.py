"""dp-fedavg's frozen config and its validation, importable by a device without the system's
in-process or server code (the published protocol carries it:
:class:`~dprec.systems.deployable.ProtocolInfo`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from dprec.errors import InvalidParameterError, PrivacyParameterError

__all__ = ["Aggregation", "DpFedAvgConfig"]

Aggregation = Literal["secure", "trusted"]


def _positive(name: str, value: float) -> None:
    if isinstance(value, bool) or not (isinstance(value, int | float) and value > 0
                                       and math.isfinite(value)):
        raise InvalidParameterError(f"{name} must be finite and > 0, got {value!r}")



def _positive_int(name: str, value: object, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise InvalidParameterError(f"{name} must be an integer >= 1, got {value!r}")



@dataclass(frozen=True)
class DpFedAvgConfig:
    """Settings of dp-fedavg.

    Defaults: ML-100K validation (training part of the seed-0 leave-one-out fold, sampled
    HR@10) at eps 1: factors 1/2, rounds 1/2/3/8, lr .3..30, clip .3..3, rate .2/.5/1;
    factors 2, rounds 2, lr 2, clip 2 scored .375 (single seed, about +-.03). Larger eps
    wants more factors: factors 4, lr 3 at eps 4 (.475); factors 8, rounds 3, lr 3 at eps
    8 (.497). Sampling (rate < 1) did not help at eps 1 (.28-.29).
    """

    epsilon: float = 1.0
    """Target per-user epsilon of the whole run (add/remove one user's data)."""
    delta: float = 1e-6
    """Target delta."""
    rounds: int = 2
    """T, federated rounds (each costs privacy: few large steps beat many small ones)."""
    rate: float = 1.0
    """q: each client includes its data in a round with probability q (Poisson sampling, its
    own coin); 1: every client every round (no amplification)."""
    clip: float = 2.0
    """C: each item gradient is scaled to L2 norm <= C."""
    lr: float = 2.0
    """The server's learning rate (FCF's descent: V <- V + lr (2 G - 2 reg V))."""
    factors: int = 2
    """F, latent factors (the update has N F coordinates)."""
    reg: float = 0.1
    """lambda, of the user solve and the descent."""
    alpha: float = 1.0
    """Confidence slope: c_ui = 1 + alpha r_ui (FCF)."""
    server_steps: int = 1
    """Descent steps per round with the round's estimate (post-processing)."""
    init_scale: float = 0.1
    """V ~ N(0, init_scale^2) at the start (public)."""
    gamma: float | None = None
    """Quantisation scale; None: the smallest that keeps rounding within 1% of gamma C."""
    aggregation: Aggregation = "secure"
    """secure: every client adds a Skellam share; trusted: a curator adds one draw."""
    min_honest: int | None = None
    """secure: the guarantee holds for at least this many honest uploading clients (default:
    all); shares are Sk(mu / min_honest)."""
    batch_size: int = 256
    """Clients simulated per block (the result does not depend on it)."""
    n_clients: int | None = None
    """The clients enrolled, which fix each share and the secure sum's modulus: what a
    server started on its own needs (``--param n_clients=N``); a run checks it against the
    training data's users (None: the data's)."""
    validity: Literal["prio3", "none"] = "prio3"
    """secure: prio3 (the default) makes every upload over the services prove with Prio3
    that each coordinate is within C + T and ``||y||^2 <= B^2`` (:func:`~.plan.update_check`),
    each device's share truncated to T; an upload that does not verify is refused with its
    reason and the round releases the rest. In process the clients are the honest code and
    their block totals are summed as with none (the same numbers bit for bit; the report
    adds the truncation's delta). none: every update is summed, one malicious client can
    add any element of Z_q^d."""

    def __post_init__(self) -> None:
        if not (self.epsilon > 0 and math.isfinite(self.epsilon)):
            raise PrivacyParameterError(f"epsilon must be finite and > 0, got {self.epsilon}")
        if not 0 < self.delta < 1:
            raise PrivacyParameterError(f"delta must be in (0, 1), got {self.delta}")
        for name in ("rounds", "factors", "server_steps", "batch_size"):
            _positive_int(name, getattr(self, name))
        _positive_int("min_honest", self.min_honest, allow_none=True)
        _positive_int("n_clients", self.n_clients, allow_none=True)
        if self.validity not in ("prio3", "none"):
            raise InvalidParameterError(f"validity must be 'prio3' or 'none', got "
                                        f"{self.validity!r}")
        for name in ("clip", "lr", "reg", "init_scale"):
            _positive(name, getattr(self, name))
        if not (0 < self.rate <= 1):
            raise InvalidParameterError(f"rate must be in (0, 1], got {self.rate!r}")
        if not (self.alpha >= 0 and math.isfinite(self.alpha)):
            raise InvalidParameterError(f"alpha must be finite and >= 0, got {self.alpha!r}")
        if self.gamma is not None:
            _positive("gamma", self.gamma)
        if self.aggregation not in ("secure", "trusted"):
            raise InvalidParameterError(f"aggregation must be secure or trusted, got "
                                        f"{self.aggregation!r}")
        if self.min_honest is not None and self.aggregation == "trusted":
            raise InvalidParameterError("min_honest applies to aggregation=secure only")
