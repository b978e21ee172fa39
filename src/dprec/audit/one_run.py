"""One-run audit of DP-PrivRec with canary clients (Steinke, Nasr, Jagielski, NeurIPS 2023).

Setup (white-box canary clients, their Sec. 7 and Andrew et al. 2023's canary clients for
federated learning): ``m`` canary slots are added to the training population, so the
population has ``N = n_train + m`` clients. Each slot independently (a seeded Generator,
probability 1/2) holds either

- the canary: a client whose update is S * u_k, a fixed random unit direction u_k (``support``
  random coordinates with random signs), i.e. an update of the largest norm the server
  accepts, pointing where no one else points; or
- a blank client, whose update is 0.

The two choices of one slot are neighbouring datasets under DP-PrivRec's replace-one
adjacency, and N is the same either way, so the accountant's guarantee (the RDP accountant
applied to this run's event log: fixed-size batches of M drawn without replacement from N,
T rounds) is the one the audit tests. The model is trained once with the same server, clients
and round engine as ``dp-privrec``; the canary wrapper only answers for the canary slots.

Score: every released global model is seen (the broadcasts). In round t the change of the
model along u_k, divided by server_lr * S_t / M, is x = b + noise with b = 1 if slot k was
sampled and held the canary, noise N(0, sigma^2), sigma = 2 z / sqrt(1 - h) (Algorithm 2's
sigma_D in these units). The score of slot k is the log-likelihood ratio of "canary" against
"blank" over the T rounds, sum_t ln(1 - q + q exp((x_t - 1/2)/sigma^2)) with q = M / N (the
sum of x_t, i.e. the final model change along u_k, is reported beside it).

Guesses: "canary" for the r/2 highest scores, "blank" for the r/2 lowest, no guess for the
rest. The bound is the largest eps whose p-value for the number of correct guesses v is
below beta (Steinke et al., Theorem 3; :func:`~dprec.audit.bounds.eps_lower_one_run`), for
each r of ``guesses`` at beta / len(guesses) (Bonferroni), and the best of them is reported.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Sequence

import dp_accounting
import numpy as np
import scipy.sparse as sp

from dprec.audit.bounds import eps_lower_one_run
from dprec.audit.result import AuditResult
from dprec.data.features import SideFeatures
from dprec.errors import DprecError
from dprec.privacy.adjacency import Adjacency
from dprec.privacy.events import EventLog
from dprec.privacy.levels import account
from dprec.privacy.rdp_accountant import RdpAccountant
from dprec.protocol.engine import Clients, Sent, run_protocol
from dprec.random import derive_generator
from dprec.systems.privrec.claim import paper_epsilon
from dprec.systems.privrec.config import PrivRecConfig
from dprec.systems.privrec.messages import ModelBroadcast, ModelUpdates

__all__ = ["CanaryClients", "audit_privrec_one_run", "canary_directions"]

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


class CanaryClients(Clients):
    """The training population plus ``m`` canary slots with ids ``n_train .. n_train+m-1``.

    Real clients are answered by ``inner`` (the system's own clients) on a broadcast that
    lists only them; a selected slot sends S * u_k if it holds the canary, else 0.
    """

    def __init__(self, inner: Clients, n_train: int, directions: sp.csc_matrix,
                 present: np.ndarray, event: object, population: np.ndarray) -> None:
        self.inner = inner
        self.n_train = int(n_train)
        self.directions = directions
        self.present = np.asarray(present, bool)
        self.event = event
        self.population = population
        self.participated = np.zeros(len(self.present), np.int64)

    def step(self, broadcast: ModelBroadcast, round: int,
             rng: np.random.Generator) -> Iterator[ModelUpdates]:
        chosen = broadcast.clients.astype(np.int64)
        real = chosen[chosen < self.n_train]
        slots = chosen[chosen >= self.n_train] - self.n_train
        if real.size:
            yield from self.inner.step(
                ModelBroadcast(broadcast.params, real, broadcast.round, broadcast.clip),
                round, rng)
        if slots.size:
            live = slots[self.present[slots]]
            self.participated[live] += 1
            d = np.zeros((slots.size, self.directions.shape[0]), np.float32)
            mask = self.present[slots]
            if mask.any():
                d[mask] = (self.directions[:, live].T.toarray() * broadcast.clip)
            yield ModelUpdates(d, np.ones(slots.size, np.uint8))

    def sent(self) -> list[Sent]:
        return [Sent(self.event, self.population, 1, "user")]


def _check_guesses(guesses: Sequence[int], m: int) -> tuple[int, ...]:
    out = tuple(sorted({int(r) for r in guesses if 2 <= int(r) <= m}))
    if not out:
        raise DprecError(f"guesses must hold an even number r with 2 <= r <= canaries ({m}), "
                         f"got {list(guesses)}")
    return out


def audit_privrec_one_run(cfg: PrivRecConfig, train: sp.csr_matrix, features: SideFeatures,
                          *, canaries: int = 1000, alpha: float = 0.05, seed: int = 0,
                          guesses: Sequence[int] = DEFAULT_GUESSES, support: int = 64,
                          dataset: str = "") -> AuditResult:
    """Train DP-PrivRec once on ``train`` plus ``canaries`` canary slots and bound eps from
    below at confidence ``1 - alpha`` (see the module docstring)."""
    import torch

    from dprec.models.local_training import LocalTrainer, torch_threads
    from dprec.models.side_net import SideFeatureNet, UserRows, parameters_of, to_vector
    from dprec.systems.privrec.client import SideNetClients
    from dprec.systems.privrec.server import ReptileServer
    from dprec.systems.privrec.system import privrec_noise

    if not cfg.dp or cfg.algorithm != "reptile" or cfg.inputs != "features":
        raise DprecError("the one-run audit is for dp-privrec (dp=true, reptile, features)")
    m = int(canaries)
    if isinstance(canaries, bool) or m != canaries or m < 2:
        raise DprecError(f"canaries must be an integer >= 2, got {canaries!r}")
    if not 0 < alpha < 1:
        raise DprecError(f"alpha must be in (0, 1), got {alpha}")
    rs = _check_guesses(guesses, m)
    start = time.perf_counter()
    train = sp.csr_matrix(train)
    n_train, n_items = train.shape
    if features.users.n != n_train or features.items.n != n_items:
        raise DprecError(f"side features are for {features.users.n} users x "
                         f"{features.items.n} items, the matrix is {n_train} x {n_items}")
    rng = derive_generator(seed, "audit", "one-run")
    present = rng.random(m) < 0.5
    train_users = np.flatnonzero(np.diff(train.indptr) > 0)
    population = np.concatenate([train_users, n_train + np.arange(m)])
    n_pop = len(population)
    if n_pop < cfg.clients_per_round:
        raise DprecError(f"clients_per_round={cfg.clients_per_round} is more than the "
                         f"{n_pop} clients")
    _, _, z_eff = privrec_noise(cfg)
    event = dp_accounting.SampledWithoutReplacementDpEvent(
        n_pop, cfg.clients_per_round, dp_accounting.GaussianDpEvent(z_eff))
    net = SideFeatureNet(features, n_items, dim=cfg.embedding_dim, hidden=cfg.hidden,
                         seed=int(rng.integers(2**31)))
    like = parameters_of(net)
    theta0 = to_vector(like).numpy()
    u = canary_directions(theta0.size, m, min(support, theta0.size), rng)
    inner = SideNetClients(LocalTrainer(net), like, train, UserRows.from_block(features.users),
                           cfg, event, population)
    clients = CanaryClients(inner, n_train, u, present, event, population)
    server = ReptileServer(theta0, population, n_train + m, cfg)
    ut = u.T.tocsr()
    scale_m = cfg.server_lr / cfg.clients_per_round
    xs: list[np.ndarray] = []
    state = {"theta": theta0.astype(np.float64), "clip": float(cfg.initial_clip)}

    def observe(r: int, b: ModelBroadcast) -> None:
        theta = b.params.astype(np.float64)
        xs.append(ut @ (theta - state["theta"]) / (scale_m * state["clip"]))
        state["theta"], state["clip"] = theta, float(b.clip)

    log = EventLog(n_train + m)
    with torch_threads(1):
        torch.manual_seed(int(rng.integers(2**31)))
        run = run_protocol(server, clients, cfg.rounds, rng, log, on_iteration=observe)
    x = np.asarray(xs)  # rounds x m
    sigma = 2.0 * cfg.noise_multiplier / math.sqrt(1.0 - cfg.budget_balance)
    q = cfg.clients_per_round / n_pop
    llr = np.logaddexp(math.log1p(-q), math.log(q) + (x - 0.5) / sigma**2).sum(axis=0)
    total = x.sum(axis=0)
    order = np.argsort(-llr, kind="stable")
    per_r = {}
    beta = alpha / len(rs)
    for r in rs:
        half = r // 2
        top, bottom = order[:half], order[m - (r - half):]
        v = int(present[top].sum() + (~present[bottom]).sum())
        per_r[str(r)] = {"correct": v, "eps_lower": eps_lower_one_run(m, r, v, cfg.delta, beta)}
    best = max(per_r, key=lambda k: per_r[k]["eps_lower"])
    t = sum(rec.updated for rec in run.rounds)
    levels = account(log, cfg.delta, RdpAccountant(Adjacency.REPLACE_ONE), model="central")
    claimed = paper_epsilon(cfg.noise_multiplier, cfg.clients_per_round, n_pop, t, cfg.delta)
    auc = _auc(llr, present)
    return AuditResult(
        name="dp-privrec-canaries", kind="protocol", level="user",
        claimed_epsilon=claimed, true_epsilon=levels.user.epsilon,
        empirical_lower=per_r[best]["eps_lower"], confidence=1.0 - alpha, trials=m,
        delta=cfg.delta, tight=False,
        ceiling=eps_lower_one_run(m, int(best), int(best), cfg.delta, beta),
        notes=(f"one training run of {t} rounds, M={cfg.clients_per_round} of N={n_pop} "
               f"clients ({n_train} users{' of ' + dataset if dataset else ''} + {m} canary "
               f"slots, {int(present.sum())} holding the canary), z={cfg.noise_multiplier:g}, "
               f"h={cfg.budget_balance:g}, delta={cfg.delta:g}",
               "true: RDP accountant on this run's event log (replace-one, improved "
               "conversion); claimed: the paper's Table 3 method on the same run",
               f"best of r in {list(rs)} guesses at beta = {alpha:g}/{len(rs)} each "
               f"(Bonferroni): r={best}, {per_r[best]['correct']} correct",
               f"distinguisher: canary-vs-blank likelihood ratio over every released model "
               f"(AUC {auc:.3f}); one run bounds are loose by design: each canary is sampled "
               f"about T q = {t * q:.2f} times with per-round signal-to-noise 1/sigma = "
               f"{1 / sigma:.3f}, and r guesses certify at most the ceiling"),
        params={"canaries": m, "support": int(min(support, theta0.size)),
                "rounds": cfg.rounds, "clients_per_round": cfg.clients_per_round,
                "noise_multiplier": cfg.noise_multiplier, "budget_balance": cfg.budget_balance,
                "initial_clip": cfg.initial_clip, "n_params": int(theta0.size),
                "dataset": dataset, "guesses": list(rs)},
        extra={"per_guesses": per_r, "auc_llr": auc, "auc_final_change": _auc(total, present),
               "canaries_present": int(present.sum()),
               "mean_participations": float(clients.participated[present].mean())
               if present.any() else 0.0,
               "sampling_rate": q, "rounds_run": t, "accountant_notes": list(
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
