"""FCF / FMF-LDP client (on device): private user vector, item gradient, LDP reports.

Never imports server code; shares only messages, mechanisms and the round engine
(docs/architecture.md §2).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numba
import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.mechanisms.numeric import BinaryMechanism, PiecewiseMechanism
from dprec.models.als import solve_user_factors
from dprec.privacy.ledger import PrivacyLedger
from dprec.protocol.batches import ReportBatch
from dprec.protocol.engine import Clients, Sent, client_ids
from dprec.systems.fmf.cells import assigned_cells, round_seed

__all__ = [
    "FederatedClients", "GradientSum", "check_item_matrix", "gradient_entries", "gradient_sum",
    "sample_slots", "user_vectors",
]


def user_vectors(V: np.ndarray, history: sp.csr_matrix, alpha: float, reg: float,
                 gram: np.ndarray | None = None) -> np.ndarray:
    """x_u = (V^T C_u V + lambda I)^-1 V^T C_u p(u) (paper Eq. 4); never leaves the device."""
    return solve_user_factors(V, history, alpha, reg, gram=gram)


def sample_slots(n_clients: int, k: int, n_items: int, n_factors: int,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 1, lines 2 and 4, k times per client: item and factor uniformly at random."""
    items = rng.integers(0, n_items, size=(n_clients, k), dtype=np.int32)
    factors = rng.integers(0, n_factors, size=(n_clients, k), dtype=np.uint8)
    return items, factors


@numba.njit(parallel=True, cache=True)
def _entries(indptr, indices, data, X, V, items, factors, alpha, out):  # pragma: no cover
    n, k = items.shape
    for u in numba.prange(n):
        lo, hi = indptr[u], indptr[u + 1]
        for s in range(k):
            i = items[u, s]
            pos = lo + np.searchsorted(indices[lo:hi], i)
            r = data[pos] if pos < hi and indices[pos] == i else 0.0
            pref = 1.0 if r > 0 else 0.0
            c = 1.0 + alpha * r
            dot = 0.0
            for f in range(X.shape[1]):
                dot += X[u, f] * V[i, f]
            out[u, s] = c * (pref - dot) * X[u, factors[u, s]]


def gradient_entries(X: np.ndarray, V: np.ndarray, history: sp.csr_matrix, items: np.ndarray,
                     factors: np.ndarray, alpha: float) -> np.ndarray:
    """Only the sampled entries f(u, i)_f = c_ui (p_ui - x_u . v_i) x_uf (Eq. 5), (n, k).

    The dense N x F gradient of a user is never built.
    """
    h = history.tocsr()
    h.sort_indices()
    out = np.empty(items.shape, np.float64)
    _entries(h.indptr.astype(np.int64), h.indices.astype(np.int64), h.data.astype(np.float64),
             np.ascontiguousarray(X, np.float64), np.ascontiguousarray(V, np.float64),
             items, factors, float(alpha), out)
    return out


@numba.njit(cache=True)
def _nnz_gradient(indptr, indices, data, X, V, alpha, out):  # pragma: no cover
    for u in range(len(indptr) - 1):
        for pos in range(indptr[u], indptr[u + 1]):
            i = indices[pos]
            r = data[pos]
            s = 0.0
            for f in range(X.shape[1]):
                s += X[u, f] * V[i, f]
            c = 1.0 + alpha * r
            pref = 1.0 if r > 0 else 0.0
            w = c * (pref - s) + s
            for f in range(X.shape[1]):
                out[i, f] += w * X[u, f]


def gradient_sum(X: np.ndarray, V: np.ndarray, history: sp.csr_matrix, alpha: float) -> np.ndarray:
    """sum_u f(u, .) over a batch of clients, exactly (FCF): (N, F).

    sum_u c_u * (p_u - V x_u) x_u^T = -V (X^T X) + sum over observed (u, i) of
    [c_ui (p_ui - s_ui) + s_ui] x_u with s_ui = x_u . v_i.
    """
    h = history.tocsr()
    out = -V @ (X.T @ X)
    _nnz_gradient(h.indptr.astype(np.int64), h.indices.astype(np.int64),
                  h.data.astype(np.float64), np.ascontiguousarray(X, np.float64),
                  np.ascontiguousarray(V, np.float64), float(alpha), out)
    return out


@dataclass(frozen=True)
class GradientSum:
    """FCF (non-private) upload of a batch of clients: the sum of their exact gradients.

    Stands for ``n_clients`` messages of one (N, F) gradient each; summing inside the batch
    is a simulation shortcut that changes nothing the server computes.
    """

    total: np.ndarray
    n_clients: int


class FederatedClients(Clients):
    """FCF / FMF-LDP clients: solve x_u from the broadcast V, then report (Algorithm 1).

    Each client keeps its history, its x_u and its ledger, charged with the events it sends
    (a user stops reporting once the next round would pass ``user_budget``); the population
    is simulated in batches. ``ids``: the global user id of each history row (default: the
    row index); a subset (:meth:`subset`, the clients of one shard) keeps its users' ids.
    ``cell_tokens``: one registration token per row (``cells=assigned``: the k cells come
    from :func:`~dprec.systems.fmf.cells.assigned_cells` of the broadcast and the token);
    None: each client draws its cells (Algorithm 1).
    """

    def __init__(self, history: sp.csr_matrix, *, factors: int, alpha: float, reg: float,
                 k: int, clip: float, exact: bool,
                 mechanism: BinaryMechanism | PiecewiseMechanism | None,
                 ledger: PrivacyLedger | None, batch_size: int,
                 ids: np.ndarray | None = None,
                 cell_tokens: list[bytes] | None = None) -> None:
        self._history = history
        self._factors = factors
        self._alpha = alpha
        self._reg = reg
        self._k = k
        self._clip = clip
        self._exact = exact
        self._mechanism = mechanism
        self._ledger = ledger
        self._batch_size = batch_size
        self.ids = client_ids(ids, history.shape[0])
        if cell_tokens is not None and len(cell_tokens) != history.shape[0]:
            raise DprecError(f"need one cell token per client, got {len(cell_tokens)} for "
                             f"{history.shape[0]}")
        self._tokens = cell_tokens
        self._sent: list[Sent] = []
        self.reporting_rounds = np.zeros(history.shape[0], np.int64)

    def step(self, broadcast: np.ndarray, round: int, rng: np.random.Generator
             ) -> Iterator[GradientSum | ReportBatch]:
        V = check_item_matrix(broadcast, self._history.shape[1], self._factors)
        n_users = self._history.shape[0]
        gram = V.T @ V
        self._sent = []
        for start in range(0, n_users, self._batch_size):
            msg, sent = self.step_rows(V, gram, start, min(n_users, start + self._batch_size),
                                       rng)
            if sent is not None:
                self._sent.append(sent)
            if msg is not None:
                yield msg

    def step_rows(self, V: np.ndarray, gram: np.ndarray, start: int, stop: int,
                  rng: np.random.Generator
                  ) -> tuple[GradientSum | ReportBatch | None, Sent | None]:
        """The message of history rows start:stop (one batch, or one block of a sharded
        run) given the checked broadcast ``V`` and its Gram matrix, drawn from ``rng``; and
        who sent what. (None, None) when the ledger stopped every one of them."""
        users = np.arange(start, stop)
        n_items = self._history.shape[1]
        hist = self._history[users]
        X = user_vectors(V, hist, self._alpha, self._reg, gram)
        if self._exact:
            return GradientSum(gradient_sum(X, V, hist, self._alpha), len(users)), None
        if self._ledger is not None and self._mechanism is not None:
            event = self._mechanism.dp_event()
            ok = self._ledger.can_spend(users, self._ledger.cost(event, self._k))
            self._ledger.spend_event(users[ok], event, self._k)
            users, X, hist = users[ok], X[ok], hist[ok]
        if not len(users):
            return None, None
        if self._tokens is None:
            items, factors = sample_slots(len(users), self._k, n_items, self._factors, rng)
        else:
            items, factors = assigned_cells(round_seed(V), [self._tokens[u] for u in users],
                                            self._k, n_items, self._factors)
        x = np.clip(gradient_entries(X, V, hist, items, factors, self._alpha),
                    -self._clip, self._clip) / self._clip
        mech = self._mechanism
        self.reporting_rounds[users] += 1
        ids = self.ids[users]
        sent = None if mech is None else Sent(mech.dp_event(), ids, self._k, "user")
        if isinstance(mech, BinaryMechanism):
            bits = mech.sample_bits(x.ravel(), rng).reshape(x.shape)
            return ReportBatch(ids, items, factors, bits=bits.astype(np.uint8)), sent
        y = x if mech is None else mech.sample(x.ravel(), rng).reshape(x.shape)
        return ReportBatch(ids, items, factors, values=y), sent

    def subset(self, rows: np.ndarray) -> FederatedClients:
        """The clients of history rows ``rows`` (in that order), with their ids and state."""
        rows = np.asarray(rows, np.int64)
        ledger = None
        if self._ledger is not None:
            ledger = PrivacyLedger(self._ledger.budget_eps, len(rows))
            ledger.spent[:] = self._ledger.spent[rows]
        part = FederatedClients(
            self._history[rows], factors=self._factors, alpha=self._alpha, reg=self._reg,
            k=self._k, clip=self._clip, exact=self._exact, mechanism=self._mechanism,
            ledger=ledger, batch_size=self._batch_size, ids=self.ids[rows],
            cell_tokens=None if self._tokens is None else [self._tokens[r] for r in rows])
        part.reporting_rounds[:] = self.reporting_rounds[rows]
        return part

    def state(self) -> dict[str, np.ndarray]:
        """What the clients carry from round to round: reporting rounds, spent budget."""
        out = {"reporting_rounds": self.reporting_rounds.copy()}
        if self._ledger is not None:
            out["spent"] = self._ledger.spent.copy()
        return out

    def restore(self, state: dict[str, np.ndarray]) -> None:
        """Put back a :meth:`state` (a sharded run's retried round starts from it)."""
        self.reporting_rounds = state["reporting_rounds"].copy()
        if self._ledger is not None:
            self._ledger.spent = state["spent"].copy()

    @property
    def k(self) -> int:
        """Reports each client sends per round."""
        return self._k

    def sent(self) -> list[Sent]:
        return list(self._sent)


def check_item_matrix(V: object, n_items: int, n_factors: int) -> np.ndarray:
    """Refuse a broadcast V that does not fit (untrusted server): shape, dtype, finiteness."""
    if not isinstance(V, np.ndarray) or V.shape != (n_items, n_factors):
        shape = getattr(V, "shape", type(V).__name__)
        raise DprecError(f"the item matrix must be ({n_items}, {n_factors}), got {shape}")
    if not np.issubdtype(V.dtype, np.floating) or not np.all(np.isfinite(V)):
        raise DprecError("the item matrix must hold finite floats")
    return V
