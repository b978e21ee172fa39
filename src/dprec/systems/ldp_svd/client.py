"""LDP rating clients (on device): normalise, perturb every rated value, upload once.

Seed 001 Sec. IV-A (docs/architecture.md §3): a rating r on the public scale [low, high] becomes
x = (r - low)/(high - low) in [0, 1] and is perturbed locally. Mechanisms on [0, 1]
(Laplace, Laplace-RR) perturb x itself; Duchi's and the piecewise mechanism work on
[-1, 1] and perturb 2x - 1 (Duchi's report is the sign, sent as +-1).

``fake_rate`` (hide_items): each item the user did NOT rate also gets a report, independently
with probability q = fake_rate, whose true value is the scale midpoint (x = 1/2), perturbed by
the same mechanism. Real and fake reports are sorted together by item, so the server sees a
set of (item, value) pairs with no mark of which were rated.

Never imports server code; shares only messages, mechanisms and the round engine.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.mechanisms.laplace_rr import LaplaceRR
from dprec.mechanisms.numeric import BinaryMechanism, LaplaceMechanism, PiecewiseMechanism
from dprec.protocol.engine import Clients, Sent
from dprec.systems.ldp_svd.messages import RatingReports, Scale

__all__ = ["FAKE_VALUE", "RatingClients", "RatingMechanism", "perturb", "upload"]

RatingMechanism = LaplaceMechanism | LaplaceRR | BinaryMechanism | PiecewiseMechanism

FAKE_VALUE = 0.5
"""The true value of a fake report on the normalised scale: the public scale midpoint."""


def perturb(x: np.ndarray, mechanism: RatingMechanism, rng: np.random.Generator) -> np.ndarray:
    """Reports of normalised values ``x`` in [0, 1], in the mechanism's report space."""
    if isinstance(mechanism, LaplaceMechanism | LaplaceRR):
        return mechanism.sample(x, rng)
    if isinstance(mechanism, BinaryMechanism):
        return np.where(mechanism.sample_bits(2.0 * x - 1.0, rng), 1.0, -1.0)
    if isinstance(mechanism, PiecewiseMechanism):
        return mechanism.sample(2.0 * x - 1.0, rng)
    raise DprecError(f"mechanism must be Laplace, Laplace-RR, Duchi (binary) or piecewise, "
                     f"got {type(mechanism).__name__}")


def upload(ratings: sp.csr_matrix, first_user: int, scale: Scale, mechanism: RatingMechanism,
           fake_rate: float, rng: np.random.Generator) -> tuple[RatingReports, np.ndarray]:
    """The uploads of the clients whose ratings are the rows of ``ratings`` (user ids from
    ``first_user``): every rated item, plus each unrated item with probability ``fake_rate``.

    Returns the batch and each client's number of real (rated) reports.
    """
    n, n_items = ratings.shape
    counts = np.diff(ratings.indptr)
    users = np.repeat(np.arange(n, dtype=np.int64), counts)
    items = ratings.indices.astype(np.int64)
    x = scale.normalise(ratings.data)
    if fake_rate > 0:
        fake = rng.random((n, n_items)) < fake_rate
        fake[users, items] = False
        fu, fi = np.nonzero(fake)
        users = np.concatenate([users, fu.astype(np.int64)])
        items = np.concatenate([items, fi.astype(np.int64)])
        x = np.concatenate([x, np.full(fu.size, FAKE_VALUE)])
        order = np.lexsort((items, users))
        users, items, x = users[order], items[order], x[order]
    values = perturb(x, mechanism, rng)
    return RatingReports(users + first_user, items, values), counts


class RatingClients(Clients):
    """Every client perturbs each of its ratings once and uploads (one round, batches of users).

    Privacy events: each client that rated n_u > 0 items sent n_u copies of the mechanism's
    event, one per rating (unit "interaction"). Fake reports read no rating value; what they
    reveal about which items were rated is accounted by the system (item membership).
    """

    def __init__(self, ratings: sp.csr_matrix, scale: Scale, mechanism: RatingMechanism,
                 batch_size: int, fake_rate: float = 0.0) -> None:
        if isinstance(batch_size, bool) or int(batch_size) != batch_size or batch_size < 1:
            raise DprecError(f"batch_size must be an integer >= 1, got {batch_size}")
        if not 0.0 <= fake_rate <= 1.0:
            raise DprecError(f"fake_rate must be in [0, 1], got {fake_rate}")
        self._ratings = ratings
        self._scale = scale
        self._mechanism = mechanism
        self._batch_size = int(batch_size)
        self._fake_rate = float(fake_rate)
        self._sent: list[Sent] = []
        self.reports = 0
        self.fake_reports = 0

    def step(self, broadcast: object, round: int, rng: np.random.Generator
             ) -> Iterator[RatingReports]:
        n_users = self._ratings.shape[0]
        self._sent = []
        event = self._mechanism.dp_event()
        for start in range(0, n_users, self._batch_size):
            block = self._ratings[start:start + self._batch_size]
            msg, counts = upload(block, start, self._scale, self._mechanism, self._fake_rate,
                                 rng)
            self.reports += len(msg)
            self.fake_reports += len(msg) - int(counts.sum())
            sizes, which = np.unique(counts, return_inverse=True)
            for j, c in enumerate(sizes):
                if c > 0:
                    users = start + np.flatnonzero(which == j)
                    self._sent.append(Sent(event, users, int(c), "interaction"))
            if len(msg):
                yield msg

    def sent(self) -> list[Sent]:
        return list(self._sent)
