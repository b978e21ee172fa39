"""Calibration: the least noise whose accounted epsilon meets a target, and the mechanism
epsilon whose reported per-user epsilon lands just below a target.

:func:`smallest_noise` is the one search behind every noise calibration of dprec (the
Skellam ``mu`` of dp-pop and the audits, dpals' common multiplier, dp-fedavg's ``mu``, the
sampled Gaussian's noise multiplier). It assumes ``epsilon_of`` is non-increasing in the
noise (true of every accountant here: more noise never costs more privacy) and returns a
value at which ``epsilon_of`` was evaluated and met the target, so the answer is sound by
construction whatever the accountant; it is within a factor ``1 + rtol`` of the smallest
sound value.

The bracket is the same for every caller: powers of 4 anchored at 1 (``4^j`` up while the
target is missed, ``4^-j`` down while it is met), then bisection on ``log x``. Sharing it
makes the answer depend on the accountant and ``rtol`` only, never on who asks.
dp_accounting's ``mechanism_calibration.calibrate_dp_mechanism`` was not used: it needs a
dp_accounting ``PrivacyAccountant`` (dprec's accountants compose event multisets at a
delta), searches with an absolute tolerance (noise spans 1e-3 to 1e12 here), and Brent's
steps would move every calibrated value.

:func:`calibrate_to_target` is the other direction, for probes that cost a whole model fit:
a secant search in log-log for the mechanism epsilon whose per-user epsilon (increasing in
it) lies in ``[(1 - tol) target, target]``, used by the frontier experiment.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from dprec.errors import DprecError, PrivacyParameterError

__all__ = ["BRACKET_GROWTH", "Calibration", "bisect", "calibrate_to_target", "smallest_noise"]

BRACKET_GROWTH = 4.0
"""The bracket's ratio: the search probes ``1, 4, 16, ...`` (or ``1/4, 1/16, ...``)."""


def smallest_noise(epsilon_of: Callable[[float], float], epsilon: float, *, rtol: float = 1e-6,
                   lower: float = 1e-12, upper: float = 1e30, what: str = "noise") -> float:
    """The smallest ``x`` (to relative tolerance ``rtol``, rounded up: toward more noise)
    with ``epsilon_of(x) <= epsilon``, for ``epsilon_of`` non-increasing in ``x``.

    The returned ``x`` was evaluated and meets the target; ``x / (1 + rtol)`` may not.
    The search never goes below ``lower`` (``lower`` itself is returned when it meets the
    target); no ``x`` up to ``upper`` meeting the target is a
    :class:`~dprec.errors.PrivacyParameterError` naming ``what``.
    """
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise PrivacyParameterError(f"epsilon must be finite and > 0, got {epsilon}")
    if not 0 < rtol < 1:
        raise DprecError(f"rtol must be in (0, 1), got {rtol}")
    lo: float | None = None  # the largest probe known to miss the target
    hi = 1.0
    while epsilon_of(hi) > epsilon:
        lo, hi = hi, hi * BRACKET_GROWTH
        if hi > upper:
            raise PrivacyParameterError(
                f"no {what} up to {upper:g} reaches epsilon {epsilon}; raise epsilon or delta")
    if lo is None:
        lo = hi / BRACKET_GROWTH
        while lo > lower and epsilon_of(lo) <= epsilon:
            hi, lo = lo, lo / BRACKET_GROWTH
        if lo <= lower:
            lo = lower
            if epsilon_of(lo) <= epsilon:
                return lo
    while hi / lo > 1.0 + rtol:
        mid = math.sqrt(lo * hi)
        if epsilon_of(mid) <= epsilon:
            hi = mid
        else:
            lo = mid
    return hi


def bisect(above: Callable[[float], bool], lo: float, hi: float, tol: float
           ) -> tuple[float, float]:
    """Halve ``[lo, hi]`` at its midpoint until ``hi - lo <= tol``, keeping ``above(lo)``
    (the threshold lies above ``lo``) and ``not above(hi)``; returns ``(lo, hi)``.

    The plain absolute-tolerance search of an epsilon (or delta) in a hockey-stick or
    p-value curve; noise calibration is :func:`smallest_noise`'s (relative, in log x).
    """
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if above(mid):
            lo = mid
        else:
            hi = mid
    return lo, hi


@dataclass
class Calibration:
    """The mechanism ε chosen for a target per-user ε, and every probe (mechanism ε, user ε)."""

    target: float
    epsilon: float
    user_epsilon: float
    probes: list[tuple[float, float]] = field(default_factory=list)


def calibrate_to_target(target: float, probe: Callable[[float], float],
                        start: float | None = None, tol: float = 0.02,
                        max_probes: int = 12) -> Calibration:
    """The mechanism ε whose per-user ε ``probe(ε)`` (increasing in ε) is in
    [(1 - tol) target, target].

    Secant steps on (log ε, log ε_user), starting at ``start`` (default: ``target``, right at
    once for a system whose ε is the per-user ε) and kept inside the bracket found so far
    (bisection in log ε otherwise). Without a hit after ``max_probes``, the largest probe
    below the target is taken; none below is an error.
    """
    if not (target > 0 and math.isfinite(target)):
        raise DprecError(f"the target per-user epsilon must be finite and > 0, got {target}")
    aim = math.log(target * (1 - tol / 2))
    probes: list[tuple[float, float]] = []
    lo: tuple[float, float] | None = None  # (log eps, log user eps) below the target
    hi: tuple[float, float] | None = None
    first = float(start if start is not None else target)
    x = math.log(first)
    for i in range(max_probes):
        eps = first if i == 0 else math.exp(x)  # the first probe exactly as given
        user = probe(eps)
        probes.append((eps, user))
        if (1 - tol) * target <= user <= target:
            return Calibration(target, eps, user, probes)
        y = math.log(user) if user > 0 and math.isfinite(user) else math.inf
        if user < target:
            lo = (x, y) if lo is None or x > lo[0] else lo
        else:
            hi = (x, y) if hi is None or x < hi[0] else hi
        x = _next_log_epsilon(lo, hi, aim, x, y)
    below = [p for p in probes if p[1] <= target]
    if not below:
        raise DprecError(f"no mechanism epsilon found with a per-user epsilon <= {target} "
                         f"after {max_probes} probes: {probes}")
    eps, user = max(below, key=lambda p: p[1])
    return Calibration(target, eps, user, probes)


def _next_log_epsilon(lo: tuple[float, float] | None, hi: tuple[float, float] | None,
                      aim: float, x: float, y: float) -> float:
    """The next log ε: a secant through the bracket's ends (slope 1 from the last probe
    while one side is missing), bisected when it leaves the bracket."""
    if lo is None or hi is None:
        if not math.isfinite(y):
            return x - 2.0
        step = aim - y  # at least 0.1% each way, so that every probe moves
        return x + (max(step, 1e-3) if lo is not None else min(step, -1e-3))
    if not math.isfinite(hi[1]) or hi[0] == lo[0]:
        return (lo[0] + hi[0]) / 2
    slope = (hi[1] - lo[1]) / (hi[0] - lo[0])
    guess = lo[0] + (aim - lo[1]) / slope if slope > 0 else math.nan
    inside = lo[0] + 0.05 * (hi[0] - lo[0]) <= guess <= hi[0] - 0.05 * (hi[0] - lo[0])
    return guess if math.isfinite(guess) and inside else (lo[0] + hi[0]) / 2
