"""Likelihood-ratio threshold tests between two neighbouring inputs, chosen on separate trials.

A sampler draws the distinguisher's score of ``n`` outputs of the mechanism on input 0 or
input 1; the score is the log-likelihood ratio ln f(y | x1) / f(y | x0) or any increasing
function of it, so that thresholding it gives the most powerful tests (Neyman-Pearson).
Two directions are tried: "score >= t means input 1" and "score <= t means input 0" (for a
bit flip: what an observed 1 reveals, presence; what an observed 0 reveals, absence).

The threshold and the direction are chosen on calibration trials, then counted on fresh
audit trials, so the Clopper-Pearson bound of :func:`~dprec.audit.bounds.empirical_epsilon`
is valid for the chosen test (Jagielski et al. 2020; Nasr et al. 2023). Each direction's own
bound (best threshold for that direction, counted on the same audit trials) is reported
beside it, each valid at ``1 - alpha`` on its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dprec.audit.bounds import empirical_epsilon
from dprec.errors import DprecError

__all__ = ["BYTES_PER_TRIAL", "DirectionResult", "Sampler", "TwoInputOutcome", "best_threshold",
           "check_trials_memory", "two_input_audit"]

Sampler = Callable[[int, int, np.random.Generator], np.ndarray]
"""``sample(x, n, rng)``: the scores of ``n`` independent outputs on input ``x`` (0 or 1)."""

_MAX_CANDIDATES = 4096
BYTES_PER_TRIAL = 64
"""Peak bytes per trial of a two-input audit: both inputs' float64 scores, their sorted and
negated copies and the sampler's buffers (peak RSS over the imports, measured at 10^7
trials: 57 binary, 59 bitflip-sp, 58 laplace, 65 gaussian, 80 piecewise)."""


def _candidates(pos: np.ndarray) -> np.ndarray:
    """Thresholds to try: every distinct positive score, or quantiles when there are many."""
    uniq = np.unique(pos)
    if uniq.size <= _MAX_CANDIDATES:
        return uniq
    qs = np.quantile(pos, np.linspace(0.0, 1.0, _MAX_CANDIDATES), method="inverted_cdf")
    return np.unique(np.concatenate([qs, uniq[-64:]]))


def _counts(pos_sorted: np.ndarray, neg_sorted: np.ndarray,
            t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """How many positives and negatives score >= t (both arrays sorted)."""
    tp = pos_sorted.size - np.searchsorted(pos_sorted, t, side="left")
    fp = neg_sorted.size - np.searchsorted(neg_sorted, t, side="left")
    return tp, fp


def best_threshold(pos: np.ndarray, neg: np.ndarray, alpha: float,
                   delta: float) -> tuple[float, float]:
    """(t, eps) of the test "score >= t" with the largest Clopper-Pearson eps bound on these
    scores (positives should score high)."""
    p, n = np.sort(pos), np.sort(neg)
    t = _candidates(p)
    tp, fp = _counts(p, n, t)
    eps = empirical_epsilon(tp, p.size, fp, n.size, alpha, delta)
    i = int(np.argmax(eps))
    # move the cut down to midway to the next lower negative: the same calibration false
    # positives, and fresh positives just below the lowest calibration positive still count
    below = np.searchsorted(n, t[i], side="left")
    cut = 0.5 * (t[i] + n[below - 1]) if below > 0 else t[i] - 1.0
    return float(cut), float(eps[i])


@dataclass(frozen=True)
class DirectionResult:
    """One direction's test, chosen on calibration, counted on the audit trials."""

    name: str
    threshold: float
    calibration_epsilon: float
    epsilon: float
    true_positives: int
    false_positives: int


@dataclass(frozen=True)
class TwoInputOutcome:
    """The chosen test and each direction's bound (``trials`` outputs per input)."""

    chosen: DirectionResult
    directions: tuple[DirectionResult, ...]
    trials: int
    calibration_trials: int


def check_trials_memory(trials: int) -> None:
    """DprecError, before any output is drawn, when ``trials`` outputs per input cannot fit
    in memory (:data:`BYTES_PER_TRIAL` each)."""
    from dprec.data.synthetic import require_memory
    require_memory(BYTES_PER_TRIAL * int(trials), f"an audit of {int(trials):,} trials per "
                   f"input ({BYTES_PER_TRIAL} bytes each)", "pass fewer --trials")


def _scores(sample: Sampler, x: int, n: int, rng: np.random.Generator) -> np.ndarray:
    s = np.asarray(sample(x, n, rng), dtype=np.float64)
    if s.shape != (n,):
        raise DprecError(f"a sampler must return {n} scores, got shape {s.shape}")
    if np.isnan(s).any():
        raise DprecError("a sampler returned NaN scores")
    return s


def two_input_audit(sample: Sampler, trials: int, alpha: float, delta: float,
                    rng: np.random.Generator, directions: tuple[str, str] = ("forward",
                                                                             "reverse"),
                    calibration_trials: int | None = None) -> TwoInputOutcome:
    """Audit a pair of inputs: choose the test on ``calibration_trials`` (default ``trials``)
    outputs per input, count it on ``trials`` fresh outputs per input.

    ``directions``: names of "score >= t means input 1" and "score <= t means input 0".
    """
    for name, value in (("trials", trials), ("calibration_trials", calibration_trials)):
        if value is None and name == "calibration_trials":
            continue
        if isinstance(value, bool) or int(value) != value or value < 1:  # type: ignore[arg-type]
            raise DprecError(f"{name} must be an integer >= 1, got {value!r}")
    if not isinstance(rng, np.random.Generator):
        raise DprecError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    n_cal = int(calibration_trials or trials)
    check_trials_memory(max(int(trials), n_cal))
    cal1, cal0 = _scores(sample, 1, n_cal, rng), _scores(sample, 0, n_cal, rng)
    chosen_t = [best_threshold(cal1, cal0, alpha, delta), best_threshold(-cal0, -cal1, alpha,
                                                                         delta)]
    del cal1, cal0
    s1, s0 = _scores(sample, 1, int(trials), rng), _scores(sample, 0, int(trials), rng)
    results = []
    for k, (name, (t, eps_cal)) in enumerate(zip(directions, chosen_t, strict=True)):
        pos, neg = (s1, s0) if k == 0 else (-s0, -s1)
        tp, fp = int(np.count_nonzero(pos >= t)), int(np.count_nonzero(neg >= t))
        eps = float(empirical_epsilon(tp, pos.size, fp, neg.size, alpha, delta))
        results.append(DirectionResult(name, t if k == 0 else -t, eps_cal, eps, tp, fp))
    best = max(range(2), key=lambda k: results[k].calibration_epsilon)
    return TwoInputOutcome(results[best], tuple(results), int(trials), n_cal)
