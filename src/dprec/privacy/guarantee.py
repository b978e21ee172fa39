"""What a protocol actually guarantees, and what its paper claimed."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Literal, get_args

from dprec.errors import DprecError, as_float

__all__ = [
    "Guarantee", "Level", "Model", "PrivacyReport", "REPORTED_DIGITS", "Sides", "reported_epsilon",
]

REPORTED_DIGITS = 6
"""Significant digits of a reported epsilon. The accountants' numerics (dp-accounting's PLD
and RDP, binomial laws) go through numpy's SIMD exp/log, whose last bits differ between CPUs
(AVX-512 or not); their discretisation error (1e-4 relative and more) is far above 1e-6, so
rounding to 6 digits loses nothing real and gives the same number on every CPU."""


def reported_epsilon(epsilon: float, *, upper: bool = True) -> float:
    """``epsilon`` rounded outward to :data:`REPORTED_DIGITS` significant digits: up for an
    upper bound (the rounded value is still a sound bound), down for a lower bound. A value
    within 1e-9 (relative) of a 6-digit number is that number (2.5 computed as 2.5 + 4e-16
    stays 2.5 on every CPU)."""
    eps = float(epsilon)
    if not math.isfinite(eps) or eps <= 0.0:
        return eps
    step = 10.0 ** (math.floor(math.log10(eps)) - REPORTED_DIGITS + 1)
    units = eps / step
    near = round(units)
    if abs(units - near) <= 1e-9 * max(1.0, abs(units)):
        units = near  # already on the grid: no spurious step outward
    else:
        units = math.ceil(units) if upper else math.floor(units)
    return float(f"{units * step:.{REPORTED_DIGITS}g}")


Level = Literal["event", "user"]
Sides = Literal["two", "one", "none"]
Model = Literal["local", "central", "shuffled", "secure-sum"]
_LEVELS: tuple[str, ...] = get_args(Level)
_SIDES: tuple[str, ...] = get_args(Sides)
_MODELS: tuple[str, ...] = get_args(Model)


@dataclass(frozen=True)
class Guarantee:
    """An (epsilon, delta) guarantee with its unit and its threat model.

    ``level``: what neighbouring inputs differ in (one interaction = "event", a user's whole
    data = "user"). ``sides``: "two" protects both presence and absence of the unit, "one"
    only its presence (an observation can still prove absence), "none" means no finite
    epsilon holds. ``model``: where the noise is added relative to the untrusted party.
    """

    epsilon: float
    delta: float = 0.0
    level: Level = "event"
    sides: Sides = "two"
    model: Model = "local"
    mechanism: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        refused = f"epsilon and delta must be numbers, got {self.epsilon!r}, {self.delta!r}"
        epsilon = as_float(self.epsilon, refused, DprecError)
        delta = as_float(self.delta, refused, DprecError)
        # NaN fails both comparisons; -inf is rejected (only +inf means "no finite bound").
        if not epsilon >= 0:
            raise DprecError(f"epsilon must be >= 0 (or inf), got {self.epsilon}")
        if not 0 <= delta <= 1:
            raise DprecError(f"delta must be in [0, 1], got {self.delta}")
        for name, value, allowed in (
            ("level", self.level, _LEVELS),
            ("sides", self.sides, _SIDES),
            ("model", self.model, _MODELS),
        ):
            if value not in allowed:
                raise DprecError(f"{name} must be one of {allowed}, got {value!r}")
        object.__setattr__(self, "epsilon", epsilon)
        object.__setattr__(self, "delta", delta)
        object.__setattr__(self, "notes", tuple(self.notes))

    def to_json(self) -> dict[str, object]:
        """JSON-safe dict: epsilon rounded up by :func:`reported_epsilon` (the same number on
        every CPU), an infinite one as the string "inf"."""
        d = asdict(self)
        d["notes"] = list(self.notes)
        d["epsilon"] = "inf" if math.isinf(self.epsilon) else reported_epsilon(self.epsilon)
        return d

    def describe(self) -> str:
        eps = "∞" if math.isinf(self.epsilon) else f"{self.epsilon:.4g}"
        delta = f", δ={self.delta:.3g}" if self.delta else ""
        return f"ε={eps}{delta} ({self.level}-level, {self.sides}-sided, {self.model} model)"


@dataclass(frozen=True)
class PrivacyReport:
    """Threat model, the published claim and the true guarantee, side by side."""

    system: str
    threat_model: str
    true: Guarantee
    claimed: Guarantee | None = None
    mechanisms: tuple[dict[str, object], ...] = field(default_factory=tuple)
    extra: dict[str, object] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "system": self.system,
            "threat_model": self.threat_model,
            "claimed": None if self.claimed is None else self.claimed.to_json(),
            "true": self.true.to_json(),
            "mechanisms": list(self.mechanisms),
        }
        out.update(self.extra)
        return out

    def lines(self) -> list[str]:
        """Human-readable lines for the CLI."""
        out = [f"Privacy report — {self.system}", f"  threat model: {self.threat_model}"]
        for m in self.mechanisms:
            out.append("  mechanism: " + ", ".join(f"{k}={v}" for k, v in m.items()))
        if self.claimed is not None:
            out.append(f"  published claim: {self.claimed.describe()}")
        out.append(f"  true guarantee:  {self.true.describe()}")
        for note in self.true.notes:
            out.append(f"  note: {note}")
        for k, v in self.extra.items():
            out.append(f"  {k}: {v}")
        return out
