"""The outcome of one audit: claimed, true and empirical epsilon side by side."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from dprec.audit.distinguisher import TwoInputOutcome
from dprec.privacy.events import strict_json

__all__ = ["AuditResult", "eps_json"]

Level = Literal["event", "user"]


def eps_json(value: float | None) -> float | str | None:
    """A JSON-safe epsilon: the number, "inf" for infinity, None for none."""
    if value is None:
        return None
    return "inf" if math.isinf(value) else float(value)


@dataclass(frozen=True)
class AuditResult:
    """One audit. ``empirical_lower`` holds with probability >= ``confidence``; ``tight``
    marks mechanisms whose likelihood-ratio test reaches the true eps at 10^6 trials."""

    name: str
    kind: Literal["mechanism", "protocol"]
    level: Level
    claimed_epsilon: float | None
    true_epsilon: float
    empirical_lower: float
    confidence: float
    trials: int
    delta: float = 0.0
    tight: bool = False
    ceiling: float | None = None
    """The most any audit of this design can certify at these trials and confidence."""
    directions: dict[str, dict[str, object]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    params: dict[str, object] = field(default_factory=dict)
    extra: dict[str, object] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def violates_claim(self) -> bool:
        """The lower bound, valid with probability >= ``confidence``, lies above the claimed
        eps: the claim is false (a mechanism meeting it crosses it with probability at most
        ``1 - confidence``)."""
        return self.claimed_epsilon is not None and self.empirical_lower > self.claimed_epsilon

    @property
    def violation_expected(self) -> bool:
        """A violation the analysis predicts: the true eps itself is above the claim (e.g.
        Laplace-RR's published eps); any other violation is a bug in the noise or the
        accountant."""
        return (self.violates_claim and self.claimed_epsilon is not None
                and self.true_epsilon > self.claimed_epsilon)

    def violation_message(self) -> str:
        """What a failed audit says (empty when the claim holds)."""
        if not self.violates_claim:
            return ""
        why = ("as the analysis predicts (true eps above the claim)" if self.violation_expected
               else "a bug in the noise actually drawn or in the accountant")
        return (f"AUDIT FAILED: {self.name}: the empirical lower bound "
                f"{self.empirical_lower:.4g} (confidence {self.confidence:g}, "
                f"{self.trials:,} trials) is above the claimed eps {self.claimed_epsilon:.4g} "
                f"at delta {self.delta:g}: the claim is false, {why}")

    def to_json(self) -> dict[str, object]:
        """The result document (top-level keys of issue 14 first)."""
        return {
            "claimed_epsilon": eps_json(self.claimed_epsilon),
            "true_epsilon": eps_json(self.true_epsilon),
            "empirical_lower": float(self.empirical_lower),
            "violates_claim": self.violates_claim,
            "violation_expected": self.violation_expected,
            "confidence": float(self.confidence),
            "trials": int(self.trials),
            "level": self.level,
            "name": self.name,
            "kind": self.kind,
            "delta": float(self.delta),
            "tight": bool(self.tight),
            "ceiling": eps_json(self.ceiling),
            "directions": strict_json(self.directions),
            "notes": list(self.notes),
            "params": strict_json(self.params),
            "extra": strict_json(self.extra),
            "seconds": round(float(self.seconds), 3),
        }


def directions_json(outcome: TwoInputOutcome,
                    true: dict[str, float]) -> dict[str, dict[str, object]]:
    """Per-direction bounds with the true eps of that direction."""
    out: dict[str, dict[str, object]] = {}
    for d in outcome.directions:
        out[d.name] = {
            "empirical_lower": d.epsilon,
            "true_epsilon": eps_json(true.get(d.name)),
            "threshold": d.threshold,
            "true_positives": d.true_positives,
            "false_positives": d.false_positives,
            "chosen": d.name == outcome.chosen.name,
        }
    return out
