"""The server step of dpals: item factors from the noisy sums (Chien et al., ICML 2021).

From the released integer sums the server unscales (Gramians by ``C^2 / gamma``,
right-hand sides by ``C / (gamma beta)``: the clients sent their vectors in units of the clip
``C``, the right-hand side weighted by ``beta``), unpacks the per-item
Gramians ``G_j`` and the global Gramian ``G``, projects each to the PSD cone (symmetrise, then
eigenvalues floored at 0: the nearest PSD matrix in Frobenius norm; ``_project_psd`` of the
anchor), and solves the implicit ALS normal equations of every item

    (G_j + w G + reg I) v_j = b_j          (w = unobserved_weight),

which are positive definite for ``reg > 0``.

:class:`DpalsServer` is the untrusted server as the engine's role: it publishes its X25519
public key (from the OS CSPRNG) and the initial item factors, takes each round's ONE batch
(the in-process proxy's exact sum, or the proxy's secure-sum release, which it opens and
sums mod q), refuses a sum of fewer than ``min_honest`` clients, and publishes the DP counts
(count round), the orthonormalised noisy power step (init round, :mod:`.power_init`) or the
item factors solved from the released sums (ALS round). With ``aggregation=trusted`` it holds
a curator that adds each release's central ``Sk(mu)`` to the exact sum first
(:class:`~dprec.protocol.secure_sum.curator.Curator`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numba
import numpy as np

from dprec.errors import DprecError
from dprec.protocol.engine import Server
from dprec.protocol.secure_sum.curator import Curator
from dprec.protocol.secure_sum.params import SecureSumParams
from dprec.protocol.secure_sum.sealed import KeyPair
from dprec.protocol.secure_sum.server_role import SecureSumRole
from dprec.protocol.secure_sum.vdaf.contribution import ContributionCheck
from dprec.systems.dpals.frequency import head_mask, item_regularisation
from dprec.systems.dpals.messages import DpalsModel
from dprec.systems.dpals.plan import RunPlan
from dprec.systems.dpals.power_init import power_factors
from dprec.systems.dpals.statistics import stats_width, triangle_size, unpack_gram

__all__ = ["DpalsServer", "project_psd", "solve_items"]


def project_psd(M: np.ndarray, floor: float = 0.0) -> np.ndarray:
    """The symmetric part of ``M`` (``(F, F)`` or ``(n, F, F)``) with eigenvalues below
    ``floor`` raised to ``floor``."""
    M = np.asarray(M, dtype=np.float64)
    sym = 0.5 * (M + np.swapaxes(M, -1, -2))
    batch = np.ascontiguousarray(sym.reshape(-1, *sym.shape[-2:]))
    return _project_rows(batch, float(floor)).reshape(sym.shape)


@numba.njit(cache=True)
def _project_rows(batch: np.ndarray, floor: float) -> np.ndarray:
    # one LAPACK eigh per matrix (NumPy's batched eigh is several times slower here)
    out = np.empty_like(batch)
    for i in range(batch.shape[0]):
        values, vectors = np.linalg.eigh(batch[i])
        out[i] = (vectors * np.maximum(values, floor)) @ vectors.T
    return out


def solve_items(stats: np.ndarray, gram: np.ndarray, gamma: float, factors: int,
                reg: float | np.ndarray, unobserved_weight: float, clip: float = 1.0,
                rhs_weight: float = 1.0, head: np.ndarray | None = None) -> np.ndarray:
    """(items, F) item factors from the released sums: ``stats`` (items, T + F) and ``gram``
    (T,), both at scale ``gamma`` in units of the clip (module docstring); ``reg`` one
    number or one per item; ``head`` (a mask): the items solved, the others get zero factors
    (:mod:`.frequency`)."""
    t = triangle_size(factors)
    stats = np.asarray(stats, dtype=np.float64)
    scale = clip * clip / gamma
    local = project_psd(unpack_gram(stats[:, :t] * scale, factors))
    glob = project_psd(unpack_gram(np.asarray(gram, dtype=np.float64) * scale, factors))
    rhs = stats[:, t:] * (clip / (gamma * rhs_weight))
    lhs = local + unobserved_weight * glob + np.multiply.outer(reg, np.eye(factors))
    V = np.linalg.solve(lhs, rhs[..., None])[..., 0]
    if head is not None:
        V[~head] = 0.0
    return V


class DpalsServer(SecureSumRole, Server):
    """dpals' server role (module docstring); ``plan`` holds the public numbers, the other
    arguments are the config's solve settings; ``trusted``: a curator adds each release's
    ``Sk(mu)`` (the plan's segments) and a round needs one client, not ``min_honest``."""

    public = ("n_items", "factors", "reg", "steps", "clip", "init_scale")
    label = "dpals'"

    def __init__(self, plan: RunPlan, factors: int, reg: float, unobserved_weight: float,
                 clip: float, rhs_weight: float, init_scale: float,
                 checks: Sequence[ContributionCheck] | None = None,
                 trusted: bool = False) -> None:
        self.plan = plan
        self.checks = None if checks is None else tuple(checks)
        """``validity=prio3``: each round's check, which every upload's proof is verified
        against jointly with the proxy (the server is Prio3's Leader); None: no proofs."""
        self.n_items = plan.n_items
        self.n_clients = plan.n_clients
        self.curator = (Curator(releases=lambda r: plan.round(r).segments)
                        if trusted else None)
        self.min_honest = 1 if trusted else plan.min_honest
        self.steps = sum(r.kind == "step" for r in plan.rounds)
        self.factors, self.reg, self.clip = int(factors), float(reg), float(clip)
        self.unobserved_weight, self.rhs_weight = float(unobserved_weight), float(rhs_weight)
        self.init_scale = float(init_scale)
        self.sum_length = plan.length
        """The longest round vector (a sharded run's partial sums)."""
        self.keys: KeyPair | None = None
        self.model: DpalsModel | None = None
        self.initial_factors: np.ndarray | None = None
        """The factors of the start (what the first ALS round's clients solve from)."""
        self.contributors = 0
        self.batches = 0

    def round_params(self, round: int) -> SecureSumParams:
        return self.plan.round(round).params

    def round_check(self, round: int) -> ContributionCheck | None:
        if self.checks is None:
            return None
        if not 0 <= round < len(self.checks):
            raise DprecError(f"dpals has rounds 0..{len(self.checks) - 1}, got round {round}")
        return self.checks[round]

    def start(self, rng: np.random.Generator) -> DpalsModel:
        """The key pair (OS CSPRNG), ``V_0 = init_scale N(0, 1)`` from ``rng`` and, with a
        curator, its generator from ``rng`` (after ``V_0``)."""
        V = self.init_scale * rng.standard_normal((self.n_items, self.factors))
        self.model = DpalsModel(self.new_keys(), V, np.zeros(0, np.int64))
        self.start_curator(rng)
        self.initial_factors = self.model.factors_matrix
        return self.model

    def restore(self, private: bytes, model: DpalsModel) -> None:
        """The key and the model a restarted server had published."""
        super().restore(private, model)
        self.model = model

    def aggregate(self, batches: Iterable[Any], round: int) -> DpalsModel | None:
        if self.keys is None or self.model is None:
            raise DprecError("start the server first")
        rp = self.plan.round(round)  # a round the plan does not have: refused first
        total = self.released_sum(batches, round, rp.dimension)
        if total is None:
            return None
        contributors = self.contributors
        if rp.kind == "counts":
            self.model = DpalsModel(self.keys.public, self.model.factors_matrix, total,
                                    contributors)
            return self.model
        d, f = self.n_items, self.factors
        counts = self.model.counts if self.model.counts.size else None
        head = None if counts is None else head_mask(counts, self.plan.head_items)
        if rp.kind == "init":
            V = power_factors(total.reshape(d, f), self.plan.init_gamma, self.init_scale, head)
            self.model = DpalsModel(self.keys.public, V, self.model.counts, contributors)
            return self.model
        stats = total[:d * stats_width(f)].reshape(d, stats_width(f))
        V = solve_items(stats, total[d * stats_width(f):], self.plan.gamma, f,
                        item_regularisation(self.reg, counts, self.plan.reg_exponent),
                        self.unobserved_weight, self.clip, self.rhs_weight, head)
        self.model = DpalsModel(self.keys.public, V, self.model.counts, contributors)
        return self.model
