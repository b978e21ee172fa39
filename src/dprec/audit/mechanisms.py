"""Audits of the local mechanisms in :mod:`dprec.mechanisms` (and the Gaussian step).

Each audit draws outputs of the mechanism's own sampler on its worst-case neighbouring
inputs, scores them by their likelihood ratio (or an increasing function of it) and turns
the best threshold test into a lower bound (:mod:`dprec.audit.distinguisher`). The true eps
is the mechanism's own guarantee (or the PLD accountant's, for the Gaussian); the claimed
eps is the published one.

- bitflip-*: bit 1 vs bit 0; score the reported bit; true max(ln p/q, ln (1-q)/(1-p)).
- oue-replace: value 0 vs value 1 in a domain of 2; score b0 - b1; true
  ln p/q + ln (1-q)/(1-p) = eps.
- binary: x = 1 vs x = -1; score the reported sign; true eps.
- piecewise: x = 1 vs x = -1; score ln f(t|1) - ln f(t|-1); true eps.
- laplace: x = high vs x = low; score clip(y, low, high); true eps.
- laplace-rr: x = high vs x = low; score y == high above all, y == low below all, else
  clip(y, low, high); true: none (inf).
- gaussian: query 1 vs 0, y = query + N(0, z^2); score y; true: PLD eps at delta.
- skellam: a k-hot vector vs 0 (one user present vs absent), y = x + Sk(mu)^k; score the
  log-likelihood ratio sum_i ln P(y_i - 1) / P(y_i) (for k = 1 an increasing function of y:
  the Skellam pmf is log-concave); true: the PLD accountant's eps at delta (exact PLD of k
  unit shifts, add/remove one user), the RDP bound and (k = 1) the exact eps beside it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

import dp_accounting
import numpy as np
import scipy.sparse as sp
from scipy import stats

from dprec.audit.bounds import audit_ceiling
from dprec.audit.distinguisher import Sampler, two_input_audit
from dprec.audit.result import AuditResult, Level, directions_json
from dprec.errors import DprecError, check_positive
from dprec.mechanisms.bitflip import BitFlip
from dprec.mechanisms.laplace_rr import LaplaceRR
from dprec.mechanisms.numeric import BinaryMechanism, LaplaceMechanism, PiecewiseMechanism
from dprec.mechanisms.skellam import SkellamMechanism
from dprec.privacy.adjacency import Adjacency
from dprec.privacy.pld_accountant import PldAccountant
from dprec.privacy.skellam import SkellamDpEvent, skellam_epsilon, skellam_exact_epsilon

__all__ = [
    "AuditSettings",
    "audit_binary",
    "audit_bitflip",
    "audit_gaussian",
    "audit_laplace",
    "audit_laplace_rr",
    "audit_oue_replace",
    "audit_piecewise",
    "audit_skellam",
    "run_two_input",
    "skellam_sum_sampler",
]


@dataclass(frozen=True)
class AuditSettings:
    """Run options shared by every audit."""

    trials: int = 1_000_000
    """Outputs per input counted by the chosen test."""
    alpha: float = 0.01
    """Clopper-Pearson level: the bound holds with probability >= 1 - alpha."""
    seed: int = 0
    """Seed of the audit's generator."""
    calibration_trials: int | None = None
    """Outputs per input used to choose the test (default: ``trials``)."""

    def __post_init__(self) -> None:
        t = self.trials
        if isinstance(t, bool) or not isinstance(t, int | np.integer) or t < 1:
            raise DprecError(f"trials must be an integer >= 1, got {t!r}")
        if not 0 < self.alpha < 1:
            raise DprecError(f"alpha must be in (0, 1), got {self.alpha}")
        c = self.calibration_trials
        if c is not None and (isinstance(c, bool) or not isinstance(c, int | np.integer)
                              or c < 1):
            raise DprecError(f"calibration_trials must be an integer >= 1, got {c!r}")

    def rng(self, *purpose: str) -> np.random.Generator:
        from dprec.random import derive_generator
        return derive_generator(self.seed, "audit", *purpose)


def run_two_input(name: str, kind: str, level: Level, sample: Sampler, settings: AuditSettings,
                  *, directions: tuple[str, str], direction_true: Mapping[str, float],
                  claimed: float | None, true: float, delta: float = 0.0, tight: bool,
                  notes: tuple[str, ...] = (), params: Mapping[str, object] | None = None,
                  extra: Mapping[str, object] | None = None) -> AuditResult:
    """Run :func:`two_input_audit` and package the result."""
    start = time.perf_counter()
    outcome = two_input_audit(sample, settings.trials, settings.alpha, delta,
                              settings.rng(name, level), directions, settings.calibration_trials)
    return AuditResult(
        name=name, kind=kind, level=level,  # type: ignore[arg-type]
        claimed_epsilon=claimed, true_epsilon=float(true),
        empirical_lower=outcome.chosen.epsilon, confidence=1.0 - settings.alpha,
        trials=settings.trials, delta=delta, tight=tight,
        ceiling=audit_ceiling(settings.trials, settings.alpha, delta),
        directions=directions_json(outcome, dict(direction_true)),
        notes=(f"test chosen on {outcome.calibration_trials} separate trials per input: "
               f"{outcome.chosen.name}, threshold {outcome.chosen.threshold:.6g}", *notes),
        params=dict(params or {}), extra=dict(extra or {}),
        seconds=time.perf_counter() - start)


def _ones(n: int, cols: int, col: int | None) -> sp.csr_matrix:
    """``n`` rows of ``cols`` bits, a single 1 in column ``col`` (None: all zeros)."""
    if col is None:
        return sp.csr_matrix((n, cols), dtype=np.float32)
    indptr = np.arange(n + 1, dtype=np.int64)
    return sp.csr_matrix((np.ones(n, np.float32), np.full(n, col, np.int64), indptr),
                         shape=(n, cols))


def audit_bitflip(mech: BitFlip, settings: AuditSettings, claimed: float | None = None,
                  name: str | None = None) -> AuditResult:
    """One bit, 1 vs 0, through :meth:`BitFlip.obfuscate_dense`; presence = "an observed 1
    means bit 1", absence = "an observed 0 means bit 0"."""
    def sample(x: int, n: int, rng: np.random.Generator) -> np.ndarray:
        return mech.obfuscate_dense(_ones(n, 1, 0 if x else None), rng, np.uint8)[:, 0]

    pres, absn = mech.eps_presence, mech.eps_absence
    notes = []
    if math.isinf(absn):
        notes.append("p = 1: an observed 0 never happens for bit 1, so the absence test has "
                     "no false positives and its bound grows with the trials (one-sided "
                     "mechanism: presence is finite, absence unbounded)")
    if claimed is not None and claimed > mech.epsilon:
        notes.append(f"claimed eps {claimed:g} is Wang et al.'s eps for replacing a value "
                     "(moving a 1 between two bits); one bit costs less (see oue-replace)")
    return run_two_input(
        name or mech.name, "mechanism", "event", sample, settings,
        directions=("presence", "absence"), direction_true={"presence": pres, "absence": absn},
        claimed=claimed if claimed is not None else mech.epsilon, true=mech.epsilon,
        tight=math.isfinite(mech.epsilon), notes=tuple(notes),
        params={"p": mech.p, "q": mech.q},
        extra={"true_presence": pres, "true_absence": absn})


def audit_oue_replace(mech: BitFlip, settings: AuditSettings,
                      claimed: float | None = None) -> AuditResult:
    """Unary encoding of a value in a domain of 2, value 0 vs value 1 (Wang et al.'s unit):
    the 1 moves between the two bits; score b0 - b1 (the log-likelihood ratio over
    ln p/q + ln (1-q)/(1-p))."""
    def sample(x: int, n: int, rng: np.random.Generator) -> np.ndarray:
        bits = mech.obfuscate_dense(_ones(n, 2, 0 if x else 1), rng, np.int8)
        return (bits[:, 0] - bits[:, 1]).astype(np.float64)

    true = mech.eps_presence + mech.eps_absence
    return run_two_input(
        "oue-replace" if mech.name == "bitflip-oue" else f"{mech.name}-replace", "mechanism",
        "event", sample, settings, directions=("value 0", "value 1"),
        direction_true={"value 0": true, "value 1": true},
        claimed=claimed if claimed is not None else true, true=true, tight=True,
        params={"p": mech.p, "q": mech.q, "domain": 2})


def audit_binary(mech: BinaryMechanism, settings: AuditSettings,
                 claimed: float | None = None) -> AuditResult:
    """x = 1 vs x = -1 through :meth:`BinaryMechanism.sample_bits`; score the sign."""
    def sample(x: int, n: int, rng: np.random.Generator) -> np.ndarray:
        return mech.sample_bits(np.full(n, 1.0 if x else -1.0), rng).astype(np.float64)

    e = mech.epsilon
    return run_two_input(mech.name, "mechanism", "event", sample, settings,
                         directions=("+1 report", "-1 report"),
                         direction_true={"+1 report": e, "-1 report": e},
                         claimed=claimed if claimed is not None else e, true=e, tight=True,
                         params={"epsilon": e})


def audit_piecewise(mech: PiecewiseMechanism, settings: AuditSettings,
                    claimed: float | None = None) -> AuditResult:
    """x = 1 vs x = -1 through :meth:`PiecewiseMechanism.sample`; score ln f(t|1) - ln f(t|-1)
    from the mechanism's own density (three values: -eps, 0, eps)."""
    def sample(x: int, n: int, rng: np.random.Generator) -> np.ndarray:
        t = mech.sample(np.full(n, 1.0 if x else -1.0), rng)
        return np.log(mech.density(t, 1.0)) - np.log(mech.density(t, -1.0))

    e = mech.epsilon
    return run_two_input(mech.name, "mechanism", "event", sample, settings,
                         directions=("x=1", "x=-1"), direction_true={"x=1": e, "x=-1": e},
                         claimed=claimed if claimed is not None else e, true=e, tight=True,
                         params={"epsilon": e})


def audit_laplace(mech: LaplaceMechanism, settings: AuditSettings,
                  claimed: float | None = None) -> AuditResult:
    """x = high vs x = low through :meth:`LaplaceMechanism.sample`; the log-likelihood ratio
    (|y - low| - |y - high|)/b increases with clip(y, low, high), which is the score."""
    def sample(x: int, n: int, rng: np.random.Generator) -> np.ndarray:
        y = mech.sample(np.full(n, mech.high if x else mech.low), rng)
        return np.clip(y, mech.low, mech.high)

    e = mech.epsilon
    return run_two_input(mech.name, "mechanism", "event", sample, settings,
                         directions=("x=high", "x=low"),
                         direction_true={"x=high": e, "x=low": e},
                         claimed=claimed if claimed is not None else e, true=e, tight=True,
                         params={"epsilon": e, "low": mech.low, "high": mech.high})


def audit_laplace_rr(mech: LaplaceRR, settings: AuditSettings) -> AuditResult:
    """x = high vs x = low through :meth:`LaplaceRR.sample`. The likelihood ratio is +inf at
    y == high exactly (the point mass), -inf at y == low, else the Laplace ratio: the score
    puts the two atoms above and below clip(y, low, high)."""
    lo, hi = mech.low, mech.high

    def sample(x: int, n: int, rng: np.random.Generator) -> np.ndarray:
        y = mech.sample(np.full(n, hi if x else lo), rng)
        return np.where(y == hi, hi + 1.0, np.where(y == lo, lo - 1.0, np.clip(y, lo, hi)))

    return run_two_input(
        mech.name, "mechanism", "event", sample, settings,
        directions=("x=high", "x=low"),
        direction_true={"x=high": math.inf, "x=low": math.inf},
        claimed=mech.claimed_epsilon, true=math.inf, tight=False,
        notes=(f"the output equals the input with probability p = {mech.keep_prob:.4g} and "
               "never equals another input: the test 'y == x1' has no false positives, so "
               "the bound is about ln(p trials / ln(2/alpha)) and grows with the trials; no "
               "finite eps holds, the published eps1 + eps2 is violated once the bound "
               "passes it",),
        params={"eps1": mech.eps1, "eps2": mech.eps2, "low": lo, "high": hi})


def audit_gaussian(noise_multiplier: float, delta: float,
                   settings: AuditSettings) -> AuditResult:
    """A sensitivity-1 query, 1 vs 0, plus N(0, z^2) (DP-PrivRec's noise step); score y.
    True eps: the PLD accountant on ``GaussianDpEvent(z)`` at ``delta``."""
    z = float(check_positive("noise_multiplier", noise_multiplier))
    if not 0 < delta < 1:
        raise DprecError(f"delta must be in (0, 1), got {delta}")
    true = PldAccountant().compose([(dp_accounting.GaussianDpEvent(z), 1)], delta).epsilon

    def sample(x: int, n: int, rng: np.random.Generator) -> np.ndarray:
        return float(x) + rng.normal(0.0, z, n)

    # the test reaching eps(delta) thresholds at y* = eps z^2 + 1/2 (LLR = eps)
    fpr = float(stats.norm.sf((true * z * z + 0.5) / z))
    return run_two_input(
        "gaussian", "mechanism", "event", sample, settings,
        directions=("query=1", "query=0"), direction_true={"query=1": true, "query=0": true},
        claimed=true, true=true, delta=delta, tight=False,
        notes=(f"the test that attains eps = {true:.4g} at delta = {delta:g} has FPR "
               f"{fpr:.2g}; {'below' if fpr < 10 / settings.trials else 'near'} what "
               f"{settings.trials} trials resolve, so the bound stays below eps (finite "
               "trials, not a weak test)",),
        params={"noise_multiplier": z}, extra={"optimal_test_fpr": fpr})


_SKELLAM_CHUNK = 1 << 21
"""Noise draws per chunk of the k-hot Skellam sampler (bounds its buffers)."""


def _skellam_llr(mu: float, y: np.ndarray) -> np.ndarray:
    """``ln P(y - 1) - ln P(y)`` for the ``Sk(mu)`` pmf ``P`` (``ive(|y|, 2 mu)``), by a table
    over the observed range."""
    from scipy.special import ive

    lo, hi = int(y.min()), int(y.max())
    grid = np.arange(lo, hi + 1)
    with np.errstate(divide="ignore"):
        table = np.log(ive(np.abs(grid - 1), 2 * mu)) - np.log(ive(np.abs(grid), 2 * mu))
    if not np.all(np.isfinite(table)):
        raise DprecError(f"Skellam pmf underflow at mu={mu} on [{lo}, {hi}]; use a larger mu")
    return table[y - lo]


SkellamStatistic = Literal["sum", "llr"]


def skellam_sum_sampler(noise: Callable[[int, np.random.Generator], np.ndarray], k: int
                        ) -> Sampler:
    """The score ``sum_i y_i`` over a user's ``k`` coordinates, present (``k`` ones) or absent
    (zeros): ``noise(n, rng)`` draws ``n`` sums of the honest noise on those coordinates.
    For Skellam noise that sum is ``Sk(k mu)`` (Poisson parts add), its pmf log-concave, so
    the likelihood ratio of the pair ``k + Sk(k mu)`` vs ``Sk(k mu)`` increases with it:
    thresholding it is the Neyman-Pearson test of that pair (and, the k coordinates being
    exchangeable, close to the full vector's at large mu: the Gaussian limit's sufficient
    statistic)."""
    def sample(x: int, n: int, rng: np.random.Generator) -> np.ndarray:
        out = np.empty(n, dtype=np.float64)
        for start in range(0, n, _SKELLAM_CHUNK):
            m = min(_SKELLAM_CHUNK, n - start)
            out[start:start + m] = noise(m, rng) + (k if x else 0)
        return out
    return sample


def audit_skellam(mu: float, delta: float, settings: AuditSettings, k: int = 1,
                  statistic: SkellamStatistic = "sum") -> AuditResult:
    """dp-pop's noisy sum restricted to one user's ``k`` items (one interaction for
    ``k = 1``): a k-hot vector (the user present) vs 0 (absent) plus ``Sk(mu)`` per
    coordinate through :class:`SkellamMechanism`. True eps: :class:`PldAccountant`
    (add/remove one user) on the k-hot event at ``delta`` (the exact PLD of k unit shifts,
    pessimistic at its grid). The RDP bound (AKL21 Thm 3.5) and, for ``k = 1``, the exact eps
    by the hockey-stick divergence are reported beside it.

    ``statistic``: ``sum`` (default) scores the sum of the k coordinates, drawn at once as
    ``Sk(k mu)`` by the mechanism (:func:`skellam_sum_sampler`: two Poisson draws a trial,
    so 10^7 trials take seconds); ``llr`` draws the k coordinates and scores the
    log-likelihood ratio ``sum_i ln P(y_i - 1) / P(y_i)`` (k draws a trial). For ``k = 1``
    both are the same test. A lower bound above the claim fails the audit
    (:attr:`AuditResult.violates_claim`); at dp-pop's setting (eps 1 at delta 1e-6, k 50)
    the tests near eps have false-positive rates of 10^-4 to 10^-5, so about 10^7 trials
    are needed to see a violation (see the module docs for the measured power)."""
    mech = SkellamMechanism(float(check_positive("mu", mu)))
    if not 0 < delta < 1:
        raise DprecError(f"delta must be in (0, 1), got {delta}")
    if isinstance(k, bool) or int(k) != k or k < 1:
        raise DprecError(f"k must be an integer >= 1, got {k!r}")
    if statistic not in ("sum", "llr"):
        raise DprecError(f"statistic must be sum or llr, got {statistic!r}")
    k = int(k)
    acc = PldAccountant(adjacency=Adjacency.ADD_REMOVE_ONE)
    event = mech.k_hot_event(k)
    comp = acc.compose([(event, 1)], delta)
    true = comp.epsilon
    rdp = skellam_epsilon(SkellamDpEvent(mech.mu, float(k), math.sqrt(k)), delta)
    exact = skellam_exact_epsilon(mech.mu, delta) if k == 1 else None

    def llr_sample(x: int, n: int, rng: np.random.Generator) -> np.ndarray:
        out = np.empty(n, dtype=np.float64)
        step = max(1, _SKELLAM_CHUNK // k)
        for start in range(0, n, step):
            m = min(step, n - start)
            y = mech(np.full((m, k), x, dtype=np.int64), rng)
            out[start:start + m] = _skellam_llr(mech.mu, y).sum(axis=1)
        return out

    summed = SkellamMechanism(mech.mu * k)
    sample = (llr_sample if statistic == "llr"
              else skellam_sum_sampler(lambda m, rng: summed.noise(m, rng), k))
    notes = [f"accountant: {comp.notes[0]}",
             f"statistic: {statistic} ("
             + ("the sum of the user's k coordinates, Sk(k mu) by Poisson additivity"
                if statistic == "sum" else "the log-likelihood ratio of the k coordinates")
             + ")",
             "the best test at delta uses tail outputs: about 3 * 10^5 trials per input come "
             "within 20% of the accountant at mu >= 0.5 and delta 1e-3; at delta 1e-6 about "
             "10^7 (tight=False: not at every trial count, as for the Gaussian)"]
    notes.append(f"the RDP bound (AKL21 Thm 3.5, CKS20 conversion) gives {rdp:.4g} "
                 f"({rdp / true:.3g} x the accountant's)")
    if exact is not None:
        notes.append(f"exact eps of the 1-D mechanism at delta = {delta:g}: {exact:.4g}")
    return run_two_input(
        "skellam", "mechanism", "event" if k == 1 else "user", sample, settings,
        directions=("present", "absent"), direction_true={"present": true, "absent": true},
        claimed=true, true=true, delta=delta, tight=False, notes=tuple(notes),
        params={"mu": mech.mu, "k": k, "statistic": statistic},
        extra={"exact_epsilon": exact, "rdp_epsilon": rdp,
               "accountant": f"pld, {acc.adjacency.value}"})
