"""FCF / FMF-LDP server (untrusted): unbiased gradient estimate from shuffled reports, descent.

Never imports client code (docs/architecture.md, roles).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from dprec.errors import DprecError
from dprec.mechanisms.numeric import BinaryMechanism, PiecewiseMechanism
from dprec.protocol.aggregation import Aggregator, CellSums, MeanAggregator
from dprec.protocol.engine import Server
from dprec.protocol.messages import ShuffledReports, ShuffledValues

__all__ = ["FactorServer", "descend", "estimate_mean_gradient", "mean_gradient"]


def mean_gradient(totals: np.ndarray, n_reports: int, n_items: int,
                  n_factors: int) -> np.ndarray:
    """Eq. 9 from per-cell totals: G_hat = (N F / n) sum_r y_r e_{i_r f_r}.

    ``totals``: float64 ``(N F,)``, the sum of the report values y_r in each cell
    i F + f; ``n_reports``: n, the number of reports summed (zeros when n = 0). The one
    place Eq. 9 is written: the in-process reports (:func:`estimate_mean_gradient`) and a
    sharded run's reduced :class:`~dprec.protocol.aggregation.CellSums`
    (:meth:`FactorServer.apply_sums`) both come here.
    """
    if n_reports == 0:
        return np.zeros((n_items, n_factors))
    return (totals * (n_items * n_factors / n_reports)).reshape(n_items, n_factors)


def estimate_mean_gradient(items: np.ndarray, factors: np.ndarray, values: np.ndarray,
                           n_items: int, n_factors: int,
                           aggregator: Aggregator | None = None) -> np.ndarray:
    """Unbiased estimate of the mean over users of the clipped gradient matrix (Eq. 9).

    Each report (i, f, y) with E[y | x] = x (y = +-C for the binary mechanism) stands for the
    matrix N F y e_if; as (i, f) is uniform, E[N F y e_if] = clip(f(u, .)). The estimate is
    the average over all n reports: G_hat = (N F / n) sum_r y_r e_{i_r f_r}. The per-cell
    sums come from ``aggregator`` (the plain, order-invariant mean by default).
    """
    n = len(values)
    if n == 0:
        return np.zeros((n_items, n_factors))
    flat = items.astype(np.int64) * n_factors + factors
    g = (aggregator or MeanAggregator()).cell_totals(flat, np.asarray(values, np.float64),
                                                     n_items * n_factors)
    return mean_gradient(g, n, n_items, n_factors)


def descend(V: np.ndarray, mean_gradient: np.ndarray, lr: float, reg: float,
            steps: int) -> np.ndarray:
    """``steps`` updates V <- V + lr (2 G - 2 lambda V) with the epoch's estimate G.

    -dJ/dv_i = 2 sum_u f(u, i) - 2 lambda v_i (Eq. 6) for J = sum c (p - x.v)^2 + lambda |V|^2,
    taken per user (G is a mean over users), so each step descends J.
    """
    for _ in range(steps):
        V = V + lr * (2.0 * mean_gradient - 2.0 * reg * V)
    return V


class FactorServer(Server):
    """Broadcasts V; each round estimates the mean gradient and descends (docs/architecture.md §2).

    FMF-LDP: the round's shuffled batches (one from the simulated proxy, several from a
    deployed one), debiased with the public mechanism (Eq. 9) and combined by
    ``aggregator`` (plain mean by default; the hook for robust aggregation). FCF: exact
    gradient sums. Holds only public parameters and V.
    """

    public = ("n_items", "factors", "lr", "reg", "steps", "clip", "init_scale")

    def __init__(self, n_items: int, factors: int, lr: float, reg: float, steps: int,
                 clip: float, init_scale: float,
                 mechanism: BinaryMechanism | PiecewiseMechanism | None,
                 aggregator: Aggregator | None = None) -> None:
        self.n_items = n_items
        self.factors = factors
        self.lr = lr
        self.reg = reg
        self.steps = steps
        self.clip = clip
        self.init_scale = init_scale
        self.mechanism = mechanism
        self.aggregator = aggregator or MeanAggregator()
        self.V: np.ndarray | None = None

    def start(self, rng: np.random.Generator) -> np.ndarray:
        self.V = self.init_scale * rng.standard_normal((self.n_items, self.factors))
        return self.V

    def aggregate(self, batches: Iterable[object], round: int) -> np.ndarray | None:
        assert self.V is not None
        total = np.zeros_like(self.V)
        senders = 0
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        for batch in batches:
            if isinstance(batch, ShuffledReports):
                if not isinstance(self.mechanism, BinaryMechanism):
                    raise DprecError("one-bit reports need the binary mechanism")
                # bits are validated 0/1 bytes: read them as booleans (no second check)
                bits = batch.bits.view(np.bool_)
                parts.append((batch.items, batch.factors, self.mechanism.estimate(bits)))
            elif isinstance(batch, ShuffledValues):
                parts.append((batch.items, batch.factors, batch.values.astype(np.float64)))
            else:
                total += batch.total  # type: ignore[attr-defined]
                senders += batch.n_clients  # type: ignore[attr-defined]
        if parts:
            items, factors, y = (p[0] if len(p) == 1 else np.concatenate(p)
                                 for p in zip(*parts, strict=True))
            return self._descend(self.clip * estimate_mean_gradient(
                items, factors, y, self.n_items, self.factors, self.aggregator))
        if senders:
            return self._descend(total / senders)
        return None

    def apply_sums(self, sums: CellSums) -> np.ndarray | None:
        """The round's step from report sums formed elsewhere (a sharded run's reduced
        :class:`CellSums` of the debiased values, +-C for the binary mechanism): Eq. 9
        (:func:`mean_gradient`) then descent, as :meth:`aggregate` does with the plain
        mean; None (no step) when no report came."""
        assert self.V is not None
        if not isinstance(self.aggregator, MeanAggregator):
            raise DprecError(f"the {self.aggregator.spec} aggregator needs every report of a "
                             "round in one place; sharded sums give only the plain mean: run "
                             "without --backend, or with aggregator=mean")
        n = sums.n
        if n == 0:
            return None
        return self._descend(self.clip * mean_gradient(sums.totals(), n, self.n_items,
                                                       self.factors))

    def _descend(self, mean_grad: np.ndarray) -> np.ndarray:
        assert self.V is not None
        self.V = descend(self.V, mean_grad, self.lr, self.reg, self.steps)
        return self.V
