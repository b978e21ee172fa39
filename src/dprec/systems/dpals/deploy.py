"""dpals (aggregation=secure) as services, the device-safe half: every round is one
cryptographic secure sum (:mod:`dprec.protocol.secure_sum`) through the shuffling proxy,
deployed by the layer's :class:`~dprec.protocol.secure_sum.deploy.SecureSumDeployment`, over
several rounds:

- the optional DP count round, then one round per ALS step (:mod:`dprec.systems.dpals.plan`);
  each client uploads ONE :class:`~dprec.protocol.secure_sum.wire.SumUpload` per round: its
  noisy integer vector of the round (count sample, or per-item statistics dense over all
  items and the global Gramian term), split into a mask seed sealed to the proxy and a
  share sealed to the server; the round id is bound into both boxes;
- the proxy (the layer's :class:`~dprec.protocol.secure_sum.relay.SecureSumRelay`, each
  round with its own parameters) opens only the seeds and at
  the close releases ONE shuffled batch once ``min_honest`` distinct senders uploaded;
- the server opens and sums it mod q, solves (:mod:`dprec.systems.dpals.serve`) and
  broadcasts the DP counts or the new item factors, which every client checks (shape,
  finite) before it solves its own vector from them.

Threat model: the server and the proxy do not collude; the guarantee holds while at least
``min_honest`` contributing clients are honest (docs/secure_sum.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.protocol.deployment import DeviceReader
from dprec.protocol.messages import Message, MessageError
from dprec.protocol.secure_sum.deploy import SecureSumDeployment
from dprec.protocol.secure_sum.device import DeviceRound
from dprec.protocol.secure_sum.params import SecureSumParams
from dprec.protocol.secure_sum.vdaf.contribution import ContributionCheck
from dprec.protocol.secure_sum.wire import ClientBlock
from dprec.systems.dpals.client import (
    clip_users,
    contributions,
    count_sample,
    gram_statistics,
    item_statistics,
    solve_users,
)
from dprec.systems.dpals.clients import check_model
from dprec.systems.dpals.config import DpalsConfig
from dprec.systems.dpals.frequency import uses_counts
from dprec.systems.dpals.messages import DpalsModel
from dprec.systems.dpals.plan import RunPlan, items_bound, plan_of
from dprec.systems.dpals.plan import round_check as plan_check
from dprec.systems.dpals.power_init import power_statistics

__all__ = ["DEPLOYMENT", "DpalsDeployment"]

_ROUND = slice(4, 12)  # the round id inside a secure-sum upload or release


def _plan(info: Any) -> RunPlan:
    return plan_of(info.config, int(info.n_items))


def _round_params(info: Any, data: bytes) -> SecureSumParams:
    """The parameters of the round a secure-sum record names (MessageError if none)."""
    plan = _plan(info)
    rid = int.from_bytes(bytes(data[_ROUND]), "big") if len(data) >= 12 else -1
    if not 0 <= rid < len(plan.rounds):
        raise MessageError(f"a dpals run has rounds 0..{len(plan.rounds) - 1}, the record "
                           f"names round {rid}: refused")
    return plan.rounds[rid].params


class DpalsDeployment(SecureSumDeployment):
    """dpals with ``aggregation = secure``: one secure-sum round per release (the optional
    count round, then each ALS step)."""

    name = "dpals"
    label = "dpals"
    config_class = DpalsConfig
    block_type = ClientBlock

    def rounds(self, config: DpalsConfig) -> int:
        steps = config.steps
        eps = float(config.epsilon)
        n = int(steps) if steps is not None else 3 if eps <= 1 else 4 if eps <= 5 else 5
        return n + uses_counts(config)

    def n_factors(self, config: DpalsConfig) -> int | None:
        return int(config.factors)

    def mechanism(self, config: DpalsConfig) -> None:
        """None: no single local mechanism; each release of each round has its own share
        ``Sk(mu_r / min_honest)``, which the plan of the description gives
        (:func:`~dprec.systems.dpals.plan.plan_of`)."""
        return None

    def round_params(self, info: Any, data: bytes) -> SecureSumParams:
        return _round_params(info, data)

    def all_params(self, info: Any) -> list[SecureSumParams]:
        return [r.params for r in _plan(info).rounds]

    def relay_terms(self, info: Any) -> tuple[Any, int, int]:
        """Each round's own parameters (an upload must carry its round's length)."""
        plan = _plan(info)
        return (lambda round: plan.round(round).params), plan.min_honest, plan.n_clients

    def round_check(self, settings: DpalsConfig, n_items: int, round: int
                    ) -> ContributionCheck | None:
        """``validity = prio3`` (the default): round ``round``'s vector proves each
        coordinate within ``C + T`` and the round's L2 bound (:func:`~.plan.round_check`)."""
        if settings.validity != "prio3":
            return None
        plan = plan_of(settings, int(n_items))
        return plan_check(plan, plan.round(round))

    # -- the device: its count sample or its per-item statistics, one segment a release ---

    def read_sizes(self, read: DeviceReader) -> None:
        read.integer("factors", "max_factors")

    def device_round(self, settings: DpalsConfig, n_items: int, round: int
                     ) -> DeviceRound:
        rp = plan_of(settings, int(n_items)).round(round)
        return DeviceRound(rp.params, tuple((s.dimension, s.mu_share) for s in rp.segments))

    def model_type(self) -> type[Message]:
        return DpalsModel

    def largest_model(self, settings: DpalsConfig, n_items: int) -> int:
        d, f = int(n_items), int(settings.factors)
        return DpalsModel(bytes(32), np.zeros((d, f)), np.zeros(d, np.int64)).nbytes

    def check_model(self, terms: Any, model: Any) -> None:
        check_model(model, terms.n_items, int(terms.settings.factors), False)
        if model.counts.size not in (0, terms.n_items):
            raise DprecError(f"the model's DP counts must be empty or of {terms.n_items} "
                             f"items, got {model.counts.size}")

    def device_vector(self, terms: Any, history: sp.csr_matrix, round: int,
                      rng: np.random.Generator, model: Any, client_id: int) -> np.ndarray:
        """The count sample (count round), the quantised power step (init round,
        :mod:`.power_init`) or the quantised per-item statistics and Gramian term of the
        device's own clipped vector (ALS round), every draw keyed by a seed
        from ``rng`` (:mod:`.client`, as the simulated clients with one row)."""
        c, n = terms.settings, terms.n_items
        plan = plan_of(c, n)
        rp = plan.round(round)
        seed, ids = int(rng.integers(2 ** 63)), np.array([int(client_id)], np.int64)
        h = sp.csr_matrix((np.ones(history.nnz), history.indices, history.indptr),
                          shape=(1, n))
        if rp.kind == "counts":
            kc = int(c.k if c.count_k is None else c.count_k)
            return count_sample(h, kc, seed, ids=ids).toarray().ravel()
        needs_counts = uses_counts(c)
        check_model(model, n, int(c.factors), needs_counts)
        counts = model.counts.astype(np.float64) if needs_counts else None
        weights = contributions(h, c, seed, counts, items_bound(c), ids)
        V = model.factors_matrix
        if rp.kind == "init":
            return power_statistics(V, weights, plan.init_gamma, seed, rp.round_id, ids).ravel()
        U = clip_users(solve_users(V, h, float(c.reg), float(c.unobserved_weight)),
                       float(c.clip))
        stats = item_statistics(U, weights, plan.gamma, seed, rp.round_id,
                                float(c.rhs_weight), ids)
        return np.concatenate([stats.ravel(), gram_statistics(U, plan.gamma, seed,
                                                              rp.round_id, ids)])

    def scores(self, terms: Any, history: Any, artefact: Any) -> np.ndarray:
        """``u V^T``, ``u`` solved on the device from the published ``V``."""
        V, c = artefact.factors_matrix, terms.settings
        U = solve_users(V, sp.csr_matrix(history), float(c.reg),
                        float(c.unobserved_weight))
        return np.asarray(U @ V.T).ravel()


DEPLOYMENT = DpalsDeployment()
