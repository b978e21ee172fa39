"""The public numbers of a dpals run, from its config, the item count and the number of
enrolled clients alone: what the simulation, the clients, the proxy and the server all
compute (over the services each from the published description). The one implementation of
the steps, the items bound and the releases of a config (:class:`~.system.DpalsConfig` and
:class:`~.system.Dpals` ask it too).

- The releases and their sensitivities (:mod:`.accounting`), the scale ``gamma`` and the
  common noise multiplier ``z`` that meets the target (epsilon, delta).
- The rounds: the DP count round first (:func:`~.frequency.uses_counts`), then the noisy
  power iterations of ``init = "power"`` (:mod:`.power_init`, ``init_power``: items x F),
  then one round per ALS step. A round is ONE secure sum of one vector per client, the
  concatenation of its releases (``item_statistics``: items x W, then ``global_gramian``: T;
  or ``item_counts``: items; or ``init_power``: items x F), each release with its own noise
  share ``Sk(mu_r / min_honest)``.
- Each round's secure-sum parameters (:func:`~dprec.protocol.secure_sum.params.choose_params`):
  the vector is already integer (gamma 1), its largest coordinate is the largest
  ``ceil(gamma_r c_r)`` of its releases (L-inf), the noise variance the largest summed
  one, ``2 mu_r n / min_honest``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from dprec.errors import DprecError
from dprec.protocol.secure_sum.params import SecureSumParams, choose_params
from dprec.protocol.secure_sum.vdaf.contribution import ContributionCheck, bounded_range_check
from dprec.protocol.secure_sum.vdaf.noise_bounds import choose_truncation, l2_bound_sq
from dprec.systems.dpals.accounting import (
    Release,
    adjacency_of,
    calibrate,
    choose_gamma,
    count_sensitivity,
    gram_sensitivity,
    item_stats_sensitivity,
)
from dprec.systems.dpals.frequency import uses_counts
from dprec.systems.dpals.power_init import (
    INIT_RELEASE,
    init_gamma,
    init_round_id,
    init_sensitivity,
)
from dprec.systems.dpals.statistics import stats_width, triangle_size

if TYPE_CHECKING:
    from dprec.systems.dpals.config import DpalsConfig

__all__ = ["RoundPlan", "RunPlan", "Segment", "init_iterations", "items_bound", "n_steps",
           "paper_steps", "plan_of", "releases", "round_check", "run_plan"]


@dataclass(frozen=True)
class Segment:
    """One release inside a round's vector: ``dimension`` coordinates from ``offset``."""

    name: str
    offset: int
    dimension: int
    mu: float
    """The release's central ``Sk(mu)``."""
    mu_share: float
    """One client's share, ``mu / min_honest``."""


@dataclass(frozen=True)
class RoundPlan:
    """One round: its kind, the generator id its client draws use, its segments and the
    secure-sum parameters of the concatenated vector."""

    kind: str
    """``counts``, ``init`` or ``step``."""
    round_id: int
    """The round id the clients' generators are keyed by (0: counts, s + 1: ALS step s,
    :func:`~.power_init.init_round_id`: a power iteration)."""
    segments: tuple[Segment, ...]
    params: SecureSumParams

    @property
    def dimension(self) -> int:
        return self.params.dimension


@dataclass(frozen=True)
class RunPlan:
    """Everything public about a dpals run over ``n_items`` items and ``n_clients``
    clients."""

    n_items: int
    n_clients: int
    min_honest: int
    gamma: float
    multiplier: float
    releases: tuple[Release, ...]
    rounds: tuple[RoundPlan, ...]
    head_items: int | None = None
    """The items of largest DP count the server solves (None: every item; :mod:`.frequency`)."""
    reg_exponent: float = 0.0
    """The frequency scaling of each item's regularisation (:mod:`.frequency`)."""
    init_gamma: float = 1.0
    """The quantisation scale of the power-iteration rounds (:mod:`.power_init`)."""

    @property
    def length(self) -> int:
        """The longest round vector (a sharded run pads every round to it)."""
        return max(r.dimension for r in self.rounds)

    def round(self, index: int) -> RoundPlan:
        if not 0 <= int(index) < len(self.rounds):
            raise DprecError(f"dpals runs {len(self.rounds)} rounds, got round {index}")
        return self.rounds[int(index)]


def paper_steps(epsilon: float) -> int:
    """The anchor's ALS steps on ML-20M: 3 at eps <= 1, 4 at eps <= 5, else 5."""
    return 3 if epsilon <= 1 else 4 if epsilon <= 5 else 5


def n_steps(cfg: DpalsConfig) -> int:
    """The ALS steps a config runs (``steps``, or :func:`paper_steps` when it is None)."""
    if cfg.steps is not None:
        return int(cfg.steps)
    return paper_steps(float(cfg.epsilon))


def items_bound(cfg: DpalsConfig, n_items: int | None = None) -> int:
    """M, the most items one user contributes to: k (uniform, tail) or max_items (adaptive;
    every item when None), capped at ``n_items`` when given (2^62 stands for every item)."""
    if cfg.weighting != "adaptive":
        m = int(cfg.k)
    else:
        m = 2 ** 62 if cfg.max_items is None else int(cfg.max_items)
    return m if n_items is None else min(m, int(n_items))


def init_iterations(cfg: DpalsConfig) -> int:
    """The noisy power iterations a config runs before the ALS steps (0: a random start)."""
    return int(cfg.init_iterations) if cfg.init == "power" else 0


def releases(cfg: DpalsConfig, n_items: int) -> tuple[float, list[Release]]:
    """(gamma, the releases of one run) for ``n_items`` items: sensitivities from
    :mod:`.accounting`, statistics and Gramian per step, counts once
    (:func:`~.frequency.uses_counts`), the power iterations' ``init_power``
    (:mod:`.power_init`, at its own scale :func:`~.power_init.init_gamma`)."""
    k, f, beta, steps = cfg.k, int(cfg.factors), float(cfg.rhs_weight), n_steps(cfg)
    m = items_bound(cfg, n_items)
    gamma = float(cfg.gamma) if cfg.gamma is not None else choose_gamma(k, m, f, beta)
    out = [Release("item_statistics", *item_stats_sensitivity(k, m, f, gamma, beta), 1.0,
                   steps),
           Release("global_gramian", *gram_sensitivity(f, gamma),
                   float(cfg.gram_noise_ratio), steps)]
    if uses_counts(cfg):
        kc = min(int(k if cfg.count_k is None else cfg.count_k), n_items)
        out.append(Release("item_counts", *count_sensitivity(kc),
                           float(cfg.count_noise_ratio), 1))
    if init_iterations(cfg):
        out.append(Release(INIT_RELEASE, *init_sensitivity(m, f, init_gamma(m, f)),
                           float(cfg.init_noise_ratio), init_iterations(cfg)))
    return gamma, out


def run_plan(cfg: DpalsConfig, n_items: int, n_clients: int) -> RunPlan:
    """The plan of a run of ``cfg`` (dpals' config fields; module docstring)."""
    if isinstance(n_clients, bool) or int(n_clients) != n_clients or n_clients < 1:
        raise DprecError(f"n_clients must be an integer >= 1, got {n_clients!r}")
    n, d = int(n_clients), int(n_items)
    t = n if cfg.min_honest is None else int(cfg.min_honest)
    if t > n:
        raise DprecError(f"min_honest ({t}) must be <= the {n} enrolled clients")
    gamma, rels = releases(cfg, d)
    z = calibrate(rels, float(cfg.epsilon), float(cfg.delta),
                  adjacency=adjacency_of(str(cfg.aggregation)))
    by_name = {r.name: r for r in rels}
    f = int(cfg.factors)
    weight = math.sqrt(float(cfg.k)) if cfg.weighting == "adaptive" else 1.0
    # (dimension, the largest |quantised coordinate| before rounding up)
    shapes = {"item_statistics": (d * stats_width(f),
                                  gamma * weight * max(1.0, float(cfg.rhs_weight))),
              "global_gramian": (triangle_size(f), gamma), "item_counts": (d, 1.0),
              INIT_RELEASE: (d * f, init_gamma(items_bound(cfg, d), f))}

    def plan(kind: str, round_id: int, names: tuple[str, ...]) -> RoundPlan:
        segments, at = [], 0
        for name in names:
            mu = by_name[name].mu(z)
            segments.append(Segment(name, at, shapes[name][0], mu, mu / t))
            at += shapes[name][0]
        params = choose_params(dimension=at, expected_clients=n,
                               clip=max(math.ceil(shapes[s][1]) for s in names), gamma=1.0,
                               norm="linf",
                               noise_variance=max(2.0 * s.mu_share * n for s in segments))
        return RoundPlan(kind, round_id, tuple(segments), params)

    rounds = [plan("counts", 0, ("item_counts",))] if "item_counts" in by_name else []
    rounds += [plan("init", init_round_id(i), (INIT_RELEASE,))
               for i in range(init_iterations(cfg))]
    rounds += [plan("step", s + 1, ("item_statistics", "global_gramian"))
               for s in range(n_steps(cfg))]
    head = cfg.head_items
    return RunPlan(d, n, t, gamma, z, tuple(rels), tuple(rounds),
                   None if head is None else int(head), float(cfg.reg_exponent),
                   init_gamma(items_bound(cfg, d), f))


def plan_of(config: DpalsConfig, n_items: int) -> RunPlan:
    """:func:`run_plan` of a published description (``config`` with ``n_clients``), computed
    once per (frozen, hashable) config (the proxy asks for every upload)."""
    if config.n_clients is None:
        raise DprecError("a dpals service needs n_clients, the clients enrolled (they fix "
                         "each noise share and the modulus q): --param n_clients=N")
    return _plan(config, int(n_items))


@lru_cache(maxsize=16)
def _plan(config: DpalsConfig, n_items: int) -> RunPlan:
    return run_plan(config, n_items, int(config.n_clients))


def round_check(plan: RunPlan, rp: RoundPlan) -> ContributionCheck:
    """The Prio3 check of round ``rp``'s vectors (:func:`bounded_range_check`): every
    coordinate within ``C + T`` (``C = ceil(gamma c)``, the round's ``client_bound``), and
    ``||y||^2 <= B^2`` with ``B`` the round's quantised L2 bound ``sqrt(sum_r Delta_2,r^2)``
    (each release's ``Delta_2`` bounds its quantised vector: :mod:`.accounting`) widened by
    the noise (:func:`l2_bound_sq`). ``T`` and the noise's L2 term are those of the round's
    largest share ``Sk(max mu_share)``, which bound every release's smaller share too (a
    Skellam of larger ``mu`` is the smaller plus an independent symmetric Skellam)."""
    by_name = {r.name: r for r in plan.releases}
    bound = math.sqrt(sum(by_name[s.name].l2 ** 2 for s in rp.segments))
    return _bounded_check(rp.dimension, rp.params.client_bound,
                          max(s.mu_share for s in rp.segments), plan.n_clients, bound)


@lru_cache(maxsize=32)
def _bounded_check(dimension: int, client_bound: int, mu_share: float, n_clients: int,
                   l2: float) -> ContributionCheck:
    """:func:`round_check`'s check from its public numbers, built once per process (the
    truncation's tail sums and the circuit take about a second at ML-100K's size; every
    ALS round of a run has the same)."""
    truncation = choose_truncation(mu_share, dimension, n_clients)
    bound_sq, eta = l2_bound_sq(l2, truncation)
    return bounded_range_check(dimension, client_bound, truncation, l2_bound_sq=bound_sq,
                               l2_tv=eta)
