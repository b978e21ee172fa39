"""One-run audit of a federated system with canary clients (Steinke, Nasr, Jagielski,
NeurIPS 2023); the system gives its training (:class:`~dprec.systems.audits.CanaryTraining`,
from its spec's audit hook, e.g. DP-PrivRec's canary training in its own folder).

Setup (white-box canary clients, their Sec. 7 and Andrew et al. 2023's canary clients for
federated learning): ``m`` canary slots are added to the training population, so the
population has ``N = n_train + m`` clients. Each slot independently (a seeded Generator,
probability 1/2) holds either

- the canary: a client whose update is S * u_k, a fixed random unit direction u_k (``support``
  random coordinates with random signs), i.e. an update of the largest norm the server
  accepts, pointing where no one else points; or
- a blank client, whose update is 0.

The two choices of one slot are neighbouring datasets under replace-one adjacency, and N is
the same either way, so the accountant's guarantee (the RDP accountant applied to this run's
event log) is the one the audit tests. The model is trained once with the system's own
server, clients and round engine; the system's canary wrapper only answers for the slots.

Score: every released global model is seen (the broadcasts). In round t the change of the
model along u_k, divided by server_lr * S_t / M, is x = b + noise with b = 1 if slot k was
sampled and held the canary, noise N(0, sigma^2) (the system's
:meth:`~dprec.systems.audits.CanaryTraining.sigma`; DP-PrivRec's 2 z / sqrt(1 - h)). The
score of slot k is the log-likelihood ratio of "canary" against "blank" over the T rounds,
sum_t ln(1 - q + q exp((x_t - 1/2)/sigma^2)) with q = M / N (the sum of x_t, i.e. the
final model change along u_k, is reported beside it).

Guesses: "canary" for the r/2 highest scores, "blank" for the r/2 lowest, no guess for the
rest. The bound is the largest eps whose p-value for the number of correct guesses v is
below beta (Steinke et al., Theorem 3; :func:`~dprec.audit.bounds.eps_lower_one_run`), for
each r of ``guesses`` at beta / len(guesses) (Bonferroni), and the best of them is reported.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from dprec.audit.bounds import eps_lower_one_run
from dprec.audit.result import AuditResult
from dprec.errors import DprecError
from dprec.privacy.adjacency import Adjacency
from dprec.privacy.events import EventLog
from dprec.privacy.levels import account
from dprec.privacy.rdp_accountant import RdpAccountant
from dprec.random import derive_generator
from dprec.systems.audits import CanaryRun

__all__ = ["DEFAULT_GUESSES", "audit_one_run", "canary_directions"]

DEFAULT_GUESSES = (20, 50, 100, 200, 500)


def canary_directions(n_params: int, m: int, support: int,
                      rng: np.random.Generator) -> sp.csc_matrix:
    """``n_params x m`` unit columns, each ``support`` random coordinates of sign +-1/sqrt(k)."""
    if not 1 <= support <= n_params:
        raise DprecError(f"support must be in [1, {n_params}], got {support}")
    rows = np.concatenate([rng.choice(n_params, support, replace=False) for _ in range(m)])
    signs = rng.choice((-1.0, 1.0), size=m * support) / math.sqrt(support)
    cols = np.repeat(np.arange(m), support)
    return sp.csc_matrix((signs, (rows, cols)), shape=(n_params, m))


def _check_guesses(guesses: Sequence[int], m: int) -> tuple[int, ...]:
    out = tuple(sorted({int(r) for r in guesses if 2 <= int(r) <= m}))
    if not out:
        raise DprecError(f"guesses must hold an even number r with 2 <= r <= canaries ({m}), "
                         f"got {list(guesses)}")
    return out


def _observe_run(subject: CanaryRun, rng: np.random.Generator, present: np.ndarray
                 ) -> tuple[np.ndarray, object, object, np.ndarray, EventLog, int, int]:
    """Train once with the canary slots; (x: rounds x m observations, the run, the clients,
    the population, the log, the model's size, the training rows)."""
    t, m = subject.training, len(present)
    n_train, train_users = t.train_users()
    population = np.concatenate([train_users, n_train + np.arange(m)])
    if len(population) < t.clients_per_round:
        raise DprecError(f"clients_per_round={t.clients_per_round} is more than the "
                         f"{len(population)} clients")
    theta0 = t.initial_model(rng)
    u = canary_directions(theta0.size, m, min(subject.support, theta0.size), rng)
    clients, server = t.roles(population, n_train + m, u, present, theta0)
    ut, step = u.T.tocsr(), t.step()
    xs: list[np.ndarray] = []
    state = {"theta": theta0.astype(np.float64), "clip": t.initial_clip()}

    def observe(r: int, b: object) -> None:
        theta, clip = t.signal(b, state["clip"])  # type: ignore[arg-type]
        xs.append(ut @ (theta - state["theta"]) / (step * state["clip"]))
        state["theta"], state["clip"] = theta, clip

    log = EventLog(n_train + m)
    run = t.run(server, clients, rng, log, observe)
    return np.asarray(xs), run, clients, population, log, int(theta0.size), n_train


def audit_one_run(subject: CanaryRun, *, alpha: float = 0.05, seed: int = 0) -> AuditResult:
    """Train the subject's system once with ``subject.canaries`` canary slots and bound eps
    from below at confidence ``1 - alpha`` (see the module docstring)."""
    t, m = subject.training, int(subject.canaries)
    if isinstance(subject.canaries, bool) or m != subject.canaries or m < 2:
        raise DprecError(f"canaries must be an integer >= 2, got {subject.canaries!r}")
    if not 0 < alpha < 1:
        raise DprecError(f"alpha must be in (0, 1), got {alpha}")
    rs = _check_guesses(subject.guesses, m)
    start = time.perf_counter()
    rng = derive_generator(seed, "audit", "one-run")
    present = rng.random(m) < 0.5
    x, run, clients, population, log, n_params, n_train = _observe_run(subject, rng, present)
    n_pop = len(population)
    sigma = t.sigma()
    q = t.clients_per_round / n_pop
    llr = np.logaddexp(math.log1p(-q), math.log(q) + (x - 0.5) / sigma**2).sum(axis=0)
    total = x.sum(axis=0)
    order = np.argsort(-llr, kind="stable")
    per_r = {}
    beta = alpha / len(rs)
    for r in rs:
        half = r // 2
        top, bottom = order[:half], order[m - (r - half):]
        v = int(present[top].sum() + (~present[bottom]).sum())
        per_r[str(r)] = {"correct": v, "eps_lower": eps_lower_one_run(m, r, v, t.delta, beta)}
    best = max(per_r, key=lambda k: per_r[k]["eps_lower"])
    rounds_run = sum(rec.updated for rec in run.rounds)  # type: ignore[attr-defined]
    levels = account(log, t.delta, RdpAccountant(Adjacency.REPLACE_ONE), model="central")
    auc = _auc(llr, present)
    settings, params = t.describe()
    participated = clients.participated  # type: ignore[attr-defined]
    dataset = subject.dataset
    return AuditResult(
        name=t.label, kind="protocol", level="user",
        claimed_epsilon=t.claimed(rounds_run, n_pop), true_epsilon=levels.user.epsilon,
        empirical_lower=per_r[best]["eps_lower"], confidence=1.0 - alpha, trials=m,
        delta=t.delta, tight=False,
        ceiling=eps_lower_one_run(m, int(best), int(best), t.delta, beta),
        notes=(f"one training run of {rounds_run} rounds, M={t.clients_per_round} of "
               f"N={n_pop} clients ({n_train} users{' of ' + dataset if dataset else ''} + "
               f"{m} canary slots, {int(present.sum())} holding the canary), {settings}",
               "true: RDP accountant on this run's event log (replace-one, improved "
               "conversion); claimed: the paper's Table 3 method on the same run",
               f"best of r in {list(rs)} guesses at beta = {alpha:g}/{len(rs)} each "
               f"(Bonferroni): r={best}, {per_r[best]['correct']} correct",
               f"distinguisher: canary-vs-blank likelihood ratio over every released model "
               f"(AUC {auc:.3f}); one run bounds are loose by design: each canary is sampled "
               f"about T q = {rounds_run * q:.2f} times with per-round signal-to-noise "
               f"1/sigma = {1 / sigma:.3f}, and r guesses certify at most the ceiling"),
        params={"canaries": m, "support": int(min(subject.support, n_params)),
                **params,
                "n_params": n_params, "dataset": dataset, "guesses": list(rs)},
        extra={"per_guesses": per_r, "auc_llr": auc, "auc_final_change": _auc(total, present),
               "canaries_present": int(present.sum()),
               "mean_participations": float(participated[present].mean())
               if present.any() else 0.0,
               "sampling_rate": q, "rounds_run": rounds_run, "accountant_notes": list(
                   levels.user.notes)},
        seconds=time.perf_counter() - start)


def _auc(score: np.ndarray, label: np.ndarray) -> float:
    """Area under the ROC curve of ``score`` for ``label`` (ties count half)."""
    from scipy.stats import rankdata
    pos = int(label.sum())
    neg = label.size - pos
    if not pos or not neg:
        return math.nan
    ranks = rankdata(score)
    return float((ranks[label].sum() - pos * (pos + 1) / 2) / (pos * neg))
