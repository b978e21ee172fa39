"""LDP rating server (untrusted): decode the reports to unbiased ratings, train Funk SVD.

Seed 001 Sec. IV-B (docs/architecture.md §3): the server trains SVD by SGD on the perturbed ratings
mapped back to the rating scale. Decoding makes every report an unbiased estimate of its
rating r = low + (high - low) x:

- Laplace, Laplace-RR: the report y (E[y] = x; Laplace-RR mixes x itself and x + Lap).
- Duchi (sign s = +-1 of 2x - 1): (C s + 1)/2 with C = coth(eps/2).
- piecewise (t on [-C, C], E[t] = 2x - 1): (t + 1)/2.

Noise weighting (on by default): the decoded reports have a known noise variance s^2 (on the
[0, 1] scale, at the midpoint; public: it depends only on the mechanism), so the server fits
the weighted least squares sum_j w (r_j - r_hat_j)^2 + reg |theta|^2 with w = 1/(1 + 16 s^2),
the noise variance relative to a signal variance of (width/4)^2 (one star^2 on 1..5). With
one weight for all reports this is Funk SVD with lr w and reg / w; it keeps SGD stable (plain
lr = 0.005 diverges on Laplace reports below eps ~ 0.3) and damps fitting the noise.

Reports are NOT clipped to the scale before training: clipping a zero-mean noise pulls
ratings near the ends toward the middle (biased). Only the final predictions are clipped to
the scale, which post-processes and can only move them closer to every true rating.

Never imports client code; shares only messages, mechanisms and the round engine.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.mechanisms.laplace_rr import LaplaceRR
from dprec.mechanisms.numeric import BinaryMechanism, LaplaceMechanism, PiecewiseMechanism
from dprec.models.funk_svd import FunkSVD, FunkSVDConfig
from dprec.protocol.engine import Server
from dprec.systems.ldp_svd.messages import RatingBatch, RatingReports, Scale

__all__ = [
    "RatingMechanism", "SVDServer", "decode", "noise_variance", "report_matrix", "weighted_config",
]

RatingMechanism = LaplaceMechanism | LaplaceRR | BinaryMechanism | PiecewiseMechanism


def decode(values: np.ndarray, mechanism: RatingMechanism | None, scale: Scale) -> np.ndarray:
    """Unbiased estimates on the rating scale of reports ``values`` (``None``: true x)."""
    v = np.asarray(values, np.float64)
    if mechanism is None or isinstance(mechanism, LaplaceMechanism | LaplaceRR):
        x = v
    elif isinstance(mechanism, BinaryMechanism):
        x = 0.5 * (mechanism.scale * v + 1.0)
    elif isinstance(mechanism, PiecewiseMechanism):
        x = 0.5 * (v + 1.0)
    else:
        raise DprecError(f"mechanism must be Laplace, Laplace-RR, Duchi (binary) or piecewise, "
                         f"got {type(mechanism).__name__}")
    return scale.denormalise(x)


def noise_variance(mechanism: RatingMechanism | None) -> float:
    """Variance of one decoded report on the [0, 1] scale when the true value is 1/2."""
    if mechanism is None:
        return 0.0
    if isinstance(mechanism, LaplaceMechanism | LaplaceRR):
        return float(mechanism.variance(0.5))
    if isinstance(mechanism, BinaryMechanism | PiecewiseMechanism):
        return float(mechanism.variance(0.0)) / 4.0  # x = (t + 1)/2
    raise DprecError(f"no noise variance for {type(mechanism).__name__}")


def weighted_config(svd: FunkSVDConfig, mechanism: RatingMechanism | None,
                    enabled: bool) -> tuple[FunkSVDConfig, float]:
    """(Funk SVD settings, w): lr w and reg / w with w = 1/(1 + 16 s^2) if ``enabled``."""
    if not enabled:
        return svd, 1.0
    w = 1.0 / (1.0 + 16.0 * noise_variance(mechanism))
    return replace(svd, lr=svd.lr * w, reg=svd.reg / w), w


def report_matrix(reports: list[RatingReports], n_users: int, n_items: int,
                  values: np.ndarray) -> sp.csr_matrix:
    """The (users x items) CSR whose stored entries are exactly the reports (explicit zeros
    kept: every stored entry is an observation)."""
    users = np.concatenate([r.users for r in reports])
    items = np.concatenate([r.items for r in reports]).astype(np.int32)
    if users.size and (users.max() >= n_users or items.max() >= n_items):
        raise DprecError(f"a report names user {int(users.max())} or item {int(items.max())} "
                         f"outside the {n_users} x {n_items} matrix")
    order = np.lexsort((items, users))
    users, items, vals = users[order], items[order], values[order]
    if users.size > 1:
        dup = (np.diff(users) == 0) & (np.diff(items) == 0)
        if dup.any():
            raise DprecError(f"user {int(users[1:][dup][0])} reported item "
                             f"{int(items[1:][dup][0])} twice")
    indptr = np.zeros(n_users + 1, np.int64)
    np.cumsum(np.bincount(users, minlength=n_users), out=indptr[1:])
    return sp.csr_matrix((vals, items, indptr), shape=(n_users, n_items))


class SVDServer(Server):
    """One round: collect every upload (a simulation's :class:`RatingReports` or the
    services' :class:`RatingBatch`), decode, train Funk SVD (noise-weighted unless
    ``noise_weighting`` is False); the broadcast is the model.

    Holds only public parameters (scale, mechanism, SVD settings), what it received
    (counts) and the trained model; the report matrix is dropped after training.
    """

    public = ("n_items", "n_users", "rating_scale")

    def __init__(self, n_users: int, n_items: int, scale: Scale,
                 mechanism: RatingMechanism | None, svd: FunkSVDConfig,
                 noise_weighting: bool = True) -> None:
        self.n_users = n_users
        self.n_items = n_items
        self.scale = scale
        self.mechanism = mechanism
        self.svd, self.weight = weighted_config(svd, mechanism, noise_weighting)
        self.model: FunkSVD | None = None
        self.reports_received = 0
        self.senders = 0
        self._rng: np.random.Generator | None = None

    @property
    def rating_scale(self) -> list[float]:
        """[low, high], the public scale the reports are decoded on."""
        return [self.scale.low, self.scale.high]

    def start(self, rng: np.random.Generator) -> None:
        """Draw the server's own training stream; nothing is broadcast before the uploads."""
        self._rng = np.random.default_rng(rng.integers(2**63))
        return None

    def aggregate(self, batches: Iterable[RatingReports | RatingBatch], round: int
                  ) -> FunkSVD | None:
        if self._rng is None:
            raise DprecError("start the server before aggregating")
        received = [b.reports() if isinstance(b, RatingBatch) else b for b in batches]
        received = [b for b in received if len(b)]
        self.reports_received = sum(len(b) for b in received)
        if not received:
            return None
        self.senders = int(sum(b.clients.size for b in received))
        values = decode(np.concatenate([b.values for b in received]), self.mechanism,
                        self.scale)
        matrix = report_matrix(received, self.n_users, self.n_items, values)
        self.model = FunkSVD(self.svd).fit(matrix, self._rng)
        return self.model
