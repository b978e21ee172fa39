"""DPLCF's frozen config (and its item-CF reference points') with its validation,
importable by a device without the system's in-process or server code (the published
protocol carries it: :class:`~dprec.systems.deployable.ProtocolInfo`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from dprec.errors import DprecError, check_positive
from dprec.mechanisms.bitflip import BitFlip

__all__ = ["Estimator", "Flip", "LocalItemCFConfig"]

Estimator = Literal["naive", "unbiased", "eb"]
Flip = Literal["none", "symmetric", "asymmetric", "oue"]


@dataclass(frozen=True)
class LocalItemCFConfig:
    """Configuration of a (possibly private) local item-CF system."""

    flip: Flip = "symmetric"
    """Bit-flip mechanism on the client: none, symmetric (SP), asymmetric (AP), oue."""
    estimator: Estimator = "unbiased"
    """Server estimator of pair counts: naive, unbiased, eb."""
    epsilon: float = 1.0
    """Per-bit epsilon of the flip mechanism (ignored for flip = none)."""
    neighbours: int = 20
    """K, the neighbour-list length (paper: 20 for MovieLens, 10 for AppUsage)."""
    neighbourhood: Literal["item", "user"] = "item"
    """item = the item's global top-K (Eq. 12); user = top-K among the user's own items."""
    batch_size: int = 4096
    """Clients simulated per vectorised batch."""
    aggregator: str = "mean"
    """How the server combines the uploads (``NAME`` or ``NAME:ARG`` of
    :data:`~dprec.systems.dplcf.defences.DPLCF_AGGREGATORS`): mean, or the defences of
    issue 26, dplcf-range[:RATE], dplcf-screen[:Z], dplcf-range+screen[:Z]. In-process runs;
    the services take ``dprec serve server --aggregator``."""
    history_cap: int | None = None
    """L, a public bound on the history a client uploads (None: no cap). A client holding
    more keeps a uniformly random L of its items before flipping (:func:`client.cap_history`);
    the validity range of ``dplcf-range`` is computed with it. Privacy: the flips of the
    capped vector keep their per-bit guarantee; one interaction more or less moves at most
    two bits of the capped vector (it enters, one other leaves). The clients record both
    bits' events for every user at or over the cap (:func:`client.cap_binds`,
    :func:`client.upload_events`), so the accountant's event level composes two flips for
    them (about 2 eps for a two-sided flip; no finite eps for the one-sided asymmetric flip,
    whose displaced bit is an absence change) and one for everyone else."""

    def __post_init__(self) -> None:
        if self.flip not in ("none", "symmetric", "asymmetric", "oue"):
            raise DprecError(f"flip must be none, symmetric, asymmetric or oue, got {self.flip!r}")
        if self.estimator not in ("naive", "unbiased", "eb"):
            raise DprecError(f"estimator must be naive, unbiased or eb, got {self.estimator!r}")
        if self.neighbourhood not in ("item", "user"):
            raise DprecError(f"neighbourhood must be item or user, got {self.neighbourhood!r}")
        if self.flip != "none":
            check_positive("epsilon", self.epsilon)
        for name in ("neighbours", "batch_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or int(value) != value or value < 1:
                raise DprecError(f"{name} must be an integer >= 1, got {value}")
        if self.history_cap is not None and (isinstance(self.history_cap, bool)
                                             or int(self.history_cap) != self.history_cap
                                             or self.history_cap < 1):
            raise DprecError(f"history_cap must be an integer >= 1 or None, got "
                             f"{self.history_cap!r}")
        from dprec.systems.dplcf.defences import DPLCF_AGGREGATORS
        if str(self.aggregator).partition(":")[0] not in DPLCF_AGGREGATORS:
            raise DprecError(f"aggregator must be one of {sorted(DPLCF_AGGREGATORS)}, got "
                             f"{self.aggregator!r}")

    def mechanism(self) -> BitFlip | None:
        if self.flip == "none":
            return None
        return getattr(BitFlip, self.flip)(self.epsilon)
