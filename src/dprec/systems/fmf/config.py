"""FCF's and FMF-LDP's frozen config and its validation, importable by a device without the
system's in-process or server code (the published protocol carries it:
:class:`~dprec.systems.deployable.ProtocolInfo`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from dprec.errors import DprecError, check_positive
from dprec.mechanisms.numeric import BinaryMechanism, PiecewiseMechanism
from dprec.protocol.shuffler import DEFAULT_MAX_REPORTS_PER_SENDER, DEFAULT_THRESHOLD

__all__ = ["CellRule", "FMFConfig", "MAX_REPORT_SCALE", "Mechanism"]

Mechanism = Literal["binary", "piecewise", "none"]
CellRule = Literal["chosen", "assigned"]


@dataclass(frozen=True)
class FMFConfig:
    """Configuration of FCF / FMF-LDP (paper defaults)."""

    factors: int = 5
    """F, latent factors."""
    regularization: float = 1e-6
    """lambda."""
    lr: float = 1e-3
    """gamma, the server's learning rate."""
    alpha: float = 1.0
    """Confidence slope: c_ui = 1 + alpha r_ui (not given in the paper)."""
    epochs: int = 20
    """T, federated epochs."""
    server_steps: int = 20
    """Gradient-descent steps the server takes per epoch with the epoch's estimate."""
    epsilon: float = 2.5
    """Per-report epsilon."""
    k: int = 100
    """Reports per client per epoch."""
    clip: float = 1.0
    """Gradient entries are clipped to [-clip, clip] and scaled to [-1, 1] before the mechanism."""
    mechanism: Mechanism = "binary"
    """binary (the paper), piecewise (Wang et al. 2019), none (same sampling, no noise)."""
    exact: bool = False
    """True = FCF: each client sends its exact full gradient (non-private)."""
    init_scale: float = 0.1
    """V ~ N(0, init_scale^2) at the start."""
    shuffle_threshold: int = DEFAULT_THRESHOLD
    """Distinct senders the shuffling proxy needs before it forwards a round's reports (100:
    below that the shuffle neither amplifies at the paper's eps nor hides a sender well)."""
    user_budget: float | None = None
    """Per-user epsilon budget; a client stops reporting when the next epoch would exceed it."""
    delta: float = 1e-6
    """delta of the central guarantee after shuffling."""
    batch_size: int = 8192
    """Clients simulated per vectorised batch."""
    allow_no_update: bool = False
    """Accept a run in which no round reached the server (otherwise it is an error)."""
    cells: CellRule = "chosen"
    """Who picks a client's k (item, factor) cells: ``chosen`` (the client, Algorithm 1) or
    ``assigned`` (a hash of the broadcast and the client's proxy-issued token, checked by the
    proxy: :mod:`dprec.systems.fmf.cells`; same report law, same privacy)."""
    aggregator: str = "mean"
    """How the server combines a round's reports per cell (issue 26 §3,
    :func:`~dprec.protocol.aggregation.make_aggregator`): ``mean`` (Eq. 9), ``trimmed[:FRAC]``
    or ``median-of-means[:GROUPS]``. Post-processing of the reports: same privacy."""

    def __post_init__(self) -> None:
        for name in ("factors", "epochs", "server_steps", "k", "batch_size",
                     "shuffle_threshold"):
            if int(getattr(self, name)) < 1:
                raise DprecError(f"{name} must be >= 1, got {getattr(self, name)}")
        check_positive("epsilon", self.epsilon)
        if not math.isfinite(self.epsilon) or self.epsilon > 50:
            raise DprecError(f"epsilon must be <= 50 per report (larger is no privacy and "
                             f"overflows the accounting), got {self.epsilon}")
        self._check_report_scale()
        check_positive("lr", self.lr)
        if self.user_budget is not None:
            check_positive("user_budget", self.user_budget)
        if not 0 < self.delta < 1:
            raise DprecError(f"delta must be in (0, 1), got {self.delta}")
        for name in ("regularization", "alpha", "init_scale"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise DprecError(f"{name} must be a finite number >= 0, got {value}")
        check_positive("clip", self.clip)
        from dprec.protocol.aggregation import make_aggregator
        from dprec.systems.fmf.defences import FMF_AGGREGATORS
        if str(self.aggregator).partition(":")[0] not in FMF_AGGREGATORS:
            raise DprecError(f"aggregator must be one of {', '.join(FMF_AGGREGATORS)} (with "
                             f":ARG for the robust ones), got {self.aggregator!r}")
        make_aggregator(self.aggregator, FMF_AGGREGATORS)
        if self.cells not in ("chosen", "assigned"):
            raise DprecError(f"cells must be chosen or assigned, got {self.cells!r}")
        if self.mechanism not in ("binary", "piecewise", "none"):
            raise DprecError(f"mechanism must be binary, piecewise or none, got {self.mechanism!r}")
        if self.k > DEFAULT_MAX_REPORTS_PER_SENDER:
            raise DprecError(f"k must be <= {DEFAULT_MAX_REPORTS_PER_SENDER} (the most reports "
                             f"the proxy holds per sender and round), got {self.k}")
        if self.factors > 255:
            raise DprecError(f"factors must be <= 255, got {self.factors}")


    def _check_report_scale(self) -> None:
        """An epsilon so small that a report's magnitude C (binary: 1/tanh(eps/2), piecewise
        1 + 2/(e^(eps/2) - 1), about 2/eps and 4/eps) exceeds :data:`MAX_REPORT_SCALE` is an
        error naming epsilon: the server's V and the clients' Gram matrices hold C^2-sized
        numbers, which overflow float64 (the run ended in "not positive definite; increase
        reg" at eps = 1e-300)."""
        if self.exact or self.mechanism == "none":
            return
        binary = self.mechanism == "binary"
        mech = BinaryMechanism(self.epsilon) if binary else PiecewiseMechanism(self.epsilon)
        c = mech.scale
        if not c <= MAX_REPORT_SCALE:
            least = (2.0 * math.atanh(1.0 / MAX_REPORT_SCALE) if binary
                     else 2.0 * math.log1p(2.0 / (MAX_REPORT_SCALE - 1.0)))
            raise DprecError(
                f"epsilon={self.epsilon:g} is too small for the {self.mechanism} mechanism: "
                f"each report is +-{c:.3g} times the clipped gradient, and the server's and "
                f"the clients' arithmetic on such numbers overflows float64; use epsilon >= "
                f"{least:.3g}")



MAX_REPORT_SCALE = 1e100
"""The largest report magnitude C FMF-LDP accepts: V grows by at most lr C N F per server
step and the clients square it, which stays finite in float64 for any realistic N, F and
epochs below this (overflow was seen between eps = 1e-100 and 1e-200, C = 2e100..2e200)."""
