"""Audits of two protocols: FMF-LDP's shuffled report slot and DPLCF at user level.

Shuffled report slot (FMF-LDP, docs/architecture.md §2): ``n`` users each send one report of the
binary mechanism (eps0); the proxy shuffles them, so the server sees the multiset of
reports, whose sufficient statistic is the number of +1 reports. The other ``n - 1`` users'
inputs are fixed at x = -1 (the report law with the least variance), the audited user's
input is 1 or -1; the audited user's report comes from :meth:`BinaryMechanism.sample_bits`,
the others' count is drawn as Bin(n - 1, P(+1 | -1)) (the same law as their ``n - 1``
reports, without materialising them). The count's likelihood ratio increases with the count.
True eps: the tight shuffled accountant (FMT21 clone pair PLD,
:func:`~dprec.privacy.shuffle_guarantee.shuffled_guarantee`) at the same n, eps0 and delta;
the exact eps of this particular pair of count laws is reported beside it, which splits the gap into
the accountant's slack (worst case over all randomizers and inputs) and the audit's.

DPLCF at user level (docs/architecture.md §1): the server sees each user's whole obfuscated N-bit
vector once. All-ones vs all-zeros is the worst pair; the number of ones in the obfuscated
vector is the sufficient statistic. With N * eps in the hundreds the two laws barely
overlap, so every trial is classified correctly and the bound sits at the audit's ceiling
ln(((alpha/2)^(1/n) - delta) / (1 - (alpha/2)^(1/n))), about ln(trials) - ln(ln(2/alpha)):
no finite audit certifies more, and the user-level eps N * eps is far above it.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import scipy.sparse as sp
from scipy import stats

from dprec.audit.bounds import audit_ceiling
from dprec.audit.mechanisms import AuditSettings, run_two_input
from dprec.audit.result import AuditResult
from dprec.errors import DprecError
from dprec.mechanisms.base import event_guarantee
from dprec.mechanisms.bitflip import BitFlip
from dprec.mechanisms.numeric import BinaryMechanism
from dprec.privacy.calibrate import bisect
from dprec.privacy.shuffle_guarantee import shuffled_guarantee

__all__ = ["audit_dplcf_user", "audit_shuffled_slot", "pair_epsilon"]

_BLOCK_BITS = 1 << 24
_CALIBRATION = 100_000
"""Default calibration trials of the user-level audit: its test is clear-cut."""


def pair_epsilon(p1: np.ndarray, p0: np.ndarray, delta: float, tol: float = 1e-6) -> float:
    """The exact eps at ``delta`` of two distributions on the same finite support: the
    smallest eps with max over both directions of sum max(0, P - e^eps Q) <= delta."""
    a, b = np.asarray(p1, np.float64), np.asarray(p0, np.float64)

    def hockey(eps: float) -> float:
        ee = math.exp(eps)
        return max(float(np.maximum(a - ee * b, 0).sum()), float(np.maximum(b - ee * a, 0).sum()))

    if hockey(0.0) <= delta:
        return 0.0
    hi = 1.0
    while hockey(hi) > delta:
        hi *= 2
        if hi > 700:
            return math.inf
    lo = 0.0
    return bisect(lambda eps: hockey(eps) > delta, lo, hi, tol)[1]


def _check_int(name: str, value: object, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise DprecError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def audit_shuffled_slot(mech: BinaryMechanism, n_users: int, delta: float,
                        settings: AuditSettings, claimed: float | None = None) -> AuditResult:
    """One shuffled report slot of ``n_users`` binary reports (see the module docstring)."""
    n = _check_int("n_users", n_users, 2)
    if not 0 < delta < 1:
        raise DprecError(f"delta must be in (0, 1), got {delta}")
    q_other = float(mech.prob_one(-1.0))
    p1, p0 = float(mech.prob_one(1.0)), q_other

    def sample(x: int, m: int, rng: np.random.Generator) -> np.ndarray:
        own = mech.sample_bits(np.full(m, 1.0 if x else -1.0), rng)
        return (rng.binomial(n - 1, q_other, m) + own).astype(np.float64)

    g = shuffled_guarantee(mech.epsilon, n, 1, 1, delta)
    c = np.arange(n + 1)
    others = stats.binom.pmf(c, n - 1, q_other)
    shifted = np.concatenate([[0.0], others[:-1]])
    law1 = p1 * shifted + (1 - p1) * others
    law0 = p0 * shifted + (1 - p0) * others
    exact = pair_epsilon(law1, law0, delta)
    return run_two_input(
        "shuffle-binary", "protocol", "event", sample, settings,
        directions=("audited +1", "audited -1"),
        direction_true={"audited +1": g.epsilon, "audited -1": g.epsilon},
        claimed=claimed if claimed is not None else mech.epsilon, true=g.epsilon, delta=delta,
        tight=False,
        notes=(f"true: {g.model} guarantee of one shuffle of n={n} eps0={mech.epsilon:g} "
               f"reports at delta={delta:g} ({g.mechanism}); the exact eps of the audited "
               f"pair of count laws is {exact:.4g}",
               "gap between the accountant and the exact pair: the accountant covers every "
               "eps0-randomizer and every input of the others; gap between the exact pair "
               "and the bound: the trials (the tests near eps have tiny FPR)"),
        params={"n_users": n, "eps0": mech.epsilon, "others_input": -1.0},
        extra={"pair_epsilon": exact, "local_epsilon": mech.epsilon})


def audit_dplcf_user(mech: BitFlip, n_items: int, settings: AuditSettings,
                     claimed: float | None = None) -> AuditResult:
    """All-ones vs all-zeros N-bit vectors through :meth:`BitFlip.obfuscate_dense` (the
    server's view of one user); score the number of ones."""
    n_items = _check_int("n_items", n_items, 1)
    block = max(1, _BLOCK_BITS // n_items)

    height = block
    full = {1: sp.csr_matrix(np.ones((1, n_items), np.float32)), 0: sp.csr_matrix((1, n_items),
                                                                                dtype=np.float32)}
    blocks = {x: sp.vstack([full[x]] * height, format="csr") for x in (0, 1)}

    def sample(x: int, m: int, rng: np.random.Generator) -> np.ndarray:
        out = np.empty(m, np.float64)
        buf = np.empty((min(height, m), n_items), np.uint8)
        for start in range(0, m, height):
            rows = min(height, m - start)
            part = mech.obfuscate_dense(blocks[x][:rows], rng, out=buf[:rows])
            out[start:start + rows] = part.sum(axis=1, dtype=np.int64)
        return out

    user = event_guarantee(mech, n_items, level="user")
    ceiling = audit_ceiling(settings.trials, settings.alpha)
    if settings.calibration_trials is None and settings.trials > _CALIBRATION:
        settings = replace(settings, calibration_trials=_CALIBRATION)
    return run_two_input(
        "dplcf-user", "protocol", "user", sample, settings,
        directions=("all ones", "all zeros"),
        direction_true={"all ones": n_items * mech.eps_presence,
                        "all zeros": n_items * mech.eps_absence},
        claimed=claimed if claimed is not None else user.epsilon, true=user.epsilon,
        tight=False,
        notes=(f"true: N x eps = {n_items} x {mech.epsilon:.4g} = {user.epsilon:.6g} "
               f"({user.sides}-sided, basic composition; exact for this pair, whose "
               "all-ones output has likelihood ratio (p/q)^N)",
               f"ceiling: with {settings.trials} trials per input and confidence "
               f"{1 - settings.alpha:g} no audit certifies more than {ceiling:.4g} "
               f"(~ ln(trials) = {math.log(settings.trials):.3g}); a perfect test reaches it"),
        params={"n_items": n_items, "p": mech.p, "q": mech.q, "flip": mech.name})
