"""On-device training of many clients at once: local SGD, MAML meta-gradients, scoring.

Clients run the same computation on different data, so a round's M clients are trained
together: their parameters are stacked along a leading axis and one step of every client is
one ``torch.func.vmap`` of the per-client gradient (``functional_call`` + ``grad``), after
functorch's model-ensembling recipe. Clients hold different numbers of examples; their
example lists are padded to a common length and masked, and a client whose examples ran out
in an epoch skips the step (its parameters do not move, proximal term included), so the
batched result equals training each client alone (:func:`local_sgd` with ``batched=False``,
the reference the tests compare with).

Local objective (seed 002, Eq. 7 with the squared norm of FedProx): the mean binary
cross-entropy of a mini-batch plus (mu / 2) |theta - theta_0|^2.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

from dprec.errors import DprecError
from dprec.models.side_net import SideFeatureNet, UserRows

__all__ = [
    "ClientExamples", "LocalTrainer", "Params", "client_examples", "epoch_orders", "sample_unseen",
    "split_examples", "torch_threads",
]

Params = dict[str, torch.Tensor]


@dataclass(frozen=True)
class ClientExamples:
    """Padded training examples of m clients.

    ``items``/``labels``: (m, L); row c holds ``counts[c]`` real examples then padding.
    ``users``: the m clients' feature rows.
    """

    users: UserRows
    items: torch.Tensor
    labels: torch.Tensor
    counts: np.ndarray

    @property
    def m(self) -> int:
        return int(self.items.shape[0])


def sample_unseen(seen: sp.csr_matrix, rows: np.ndarray, rng: np.random.Generator,
                  max_tries: int = 64) -> np.ndarray:
    """One item per entry of ``rows``, uniform over the items that row of ``seen`` lacks.

    Rejection sampling, vectorised: draw, look the (row, item) keys up in the sorted keys of
    ``seen``, redraw the collisions. Rows with every item seen raise :class:`DprecError`.
    """
    n_items = seen.shape[1]
    rows = np.asarray(rows, dtype=np.int64)
    full = np.diff(seen.indptr)[rows] >= n_items
    if full.any():
        raise DprecError(f"user {int(rows[full][0])} has interacted with every item: no "
                         "negative item can be sampled")
    keys = (np.repeat(np.arange(seen.shape[0], dtype=np.int64), np.diff(seen.indptr))
            * n_items + seen.indices)
    out = rng.integers(0, n_items, size=len(rows))
    todo = np.arange(len(rows))
    for _ in range(max_tries):
        k = rows[todo] * n_items + out[todo]
        pos = np.minimum(np.searchsorted(keys, k), max(len(keys) - 1, 0))
        hit = keys[pos] == k if len(keys) else np.zeros(len(todo), bool)
        todo = todo[hit]
        if not len(todo):
            return out
        out[todo] = rng.integers(0, n_items, size=len(todo))
    raise DprecError(f"{len(todo)} negative samples still collide after {max_tries} draws: "
                     "users with almost every item rated")


def client_examples(ratings: sp.csr_matrix, clients: np.ndarray, users: UserRows,
                    rng: np.random.Generator, *, threshold: float = 3.0,
                    negative_ratio: float = 1.0, seen: sp.csr_matrix | None = None
                    ) -> ClientExamples:
    """Examples of ``clients`` (rows of ``ratings``): rated items labelled 1[rating >
    threshold], plus round(negative_ratio x positives) never-interacted items labelled 0.

    ``seen``: what counts as interacted when sampling negatives (default ``ratings``).
    ``users`` are the clients' feature rows, aligned with ``clients``.
    """
    clients = np.asarray(clients, dtype=np.int64)
    sub = ratings[clients]
    n_rated = np.diff(sub.indptr)
    rows = np.repeat(np.arange(len(clients)), n_rated)
    pos = (sub.data > threshold).astype(np.int64)
    n_neg = np.rint(negative_ratio * np.bincount(rows, weights=pos,
                                                 minlength=len(clients))).astype(np.int64)
    neg_rows = np.repeat(np.arange(len(clients)), n_neg)
    seen_m = (ratings if seen is None else seen)
    neg_items = sample_unseen(seen_m, clients[neg_rows], rng)
    all_rows = np.concatenate([rows, neg_rows])
    all_items = np.concatenate([sub.indices.astype(np.int64), neg_items])
    all_labels = np.concatenate([pos.astype(np.float32), np.zeros(len(neg_items), np.float32)])
    order = np.argsort(all_rows, kind="stable")
    all_rows, all_items, all_labels = all_rows[order], all_items[order], all_labels[order]
    counts = n_rated + n_neg
    width = max(1, int(counts.max()) if len(counts) else 1)
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    col = np.arange(len(all_rows)) - start[all_rows]
    items = np.zeros((len(clients), width), np.int64)
    labels = np.zeros((len(clients), width), np.float32)
    items[all_rows, col] = all_items
    labels[all_rows, col] = all_labels
    return ClientExamples(users, torch.from_numpy(items), torch.from_numpy(labels), counts)


def epoch_orders(counts: np.ndarray, width: int, epochs: int,
                 rng: np.random.Generator) -> np.ndarray:
    """(epochs, m, width) visiting orders: each client's real positions in a fresh random
    order, padding positions after them."""
    keys = rng.random((epochs, len(counts), width))
    keys[:, np.arange(width)[None, :] >= np.asarray(counts)[:, None]] = np.inf
    return np.argsort(keys, axis=-1, kind="stable")


@contextlib.contextmanager
def torch_threads(n: int = 1) -> Iterator[None]:
    """Run torch ops on ``n`` threads, restoring the previous setting. The per-client models
    are tiny: on 2 cores one thread is faster than two, and far faster when another process
    competes for the cores (oversubscribed OpenMP threads spin)."""
    before = torch.get_num_threads()
    torch.set_num_threads(int(n))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _mean_bce(logits: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    bce = F.binary_cross_entropy_with_logits(logits, labels, reduction="none")
    return (bce * mask).sum() / mask.sum().clamp(min=1.0)


class LocalTrainer:
    """Per-client losses of ``net`` as pure functions of a parameter dict (torch.func)."""

    def __init__(self, net: SideFeatureNet) -> None:
        self.net = net

    def logits(self, params: Params, ucat: torch.Tensor, unum: torch.Tensor,
               utags: torch.Tensor, items: torch.Tensor) -> torch.Tensor:
        """One user's logits for ``items`` (L,)."""
        n = items.shape[0]
        return functional_call(self.net, params, (ucat.expand(n, -1), unum.expand(n, -1),
                                                  utags.expand(n, -1), items))

    def bce(self, params: Params, ucat: torch.Tensor, unum: torch.Tensor, utags: torch.Tensor,
            items: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return _mean_bce(self.logits(params, ucat, unum, utags, items), labels, mask)

    def local_sgd(self, theta0: Params, data: ClientExamples, orders: np.ndarray,
                  batch_size: int, lr: float, mu: float, batched: bool = True) -> Params:
        """Every client: theta = theta0, then for each epoch (``orders[e]``) and mini-batch
        theta -= lr * grad(mean BCE + mu/2 |theta - theta0|^2). Returns stacked (m, ...)."""
        if batch_size < 1 or lr <= 0 or mu < 0:
            raise DprecError(f"need batch_size >= 1, lr > 0, mu >= 0; got {batch_size}, "
                             f"{lr}, {mu}")
        if batched:
            return self._sgd_batched(theta0, data, orders, batch_size, lr, mu)
        out = []
        for c in range(data.m):
            n = int(data.counts[c])
            one = ClientExamples(data.users.take([c]), data.items[c:c + 1, :n],
                                 data.labels[c:c + 1, :n], data.counts[c:c + 1])
            stacked = self._sgd_batched(theta0, one, orders[:, c:c + 1, :n], batch_size, lr, mu)
            out.append(stacked)
        return {k: torch.cat([o[k] for o in out]) for k in theta0}

    def _sgd_batched(self, theta0: Params, data: ClientExamples, orders: np.ndarray,
                     batch_size: int, lr: float, mu: float) -> Params:
        m, width = data.items.shape
        theta = {k: v.detach().unsqueeze(0).repeat(m, *([1] * v.dim())) for k, v in
                 theta0.items()}
        step = vmap(grad(self.bce), in_dims=(0, 0, 0, 0, 0, 0, 0))
        counts = torch.as_tensor(np.asarray(data.counts))
        rows = torch.arange(m)[:, None]
        u = data.users
        for e in range(orders.shape[0]):
            order = torch.from_numpy(np.ascontiguousarray(orders[e]))
            for start in range(0, width, batch_size):
                idx = order[:, start:start + batch_size]
                position = torch.arange(start, start + idx.shape[1])
                mask = (position[None, :] < counts[:, None]).float()
                active = mask.any(dim=1).float()
                if not bool(active.any()):
                    break
                g = step(theta, u.categorical, u.numeric, u.multi_hot,
                         data.items[rows, idx], data.labels[rows, idx], mask)
                for k in theta:
                    # the proximal term's gradient is mu (theta - theta0), added in closed form
                    grad_k = g[k] + mu * (theta[k] - theta0[k]) if mu else g[k]
                    scale = (lr * active).view(-1, *([1] * (theta[k].dim() - 1)))
                    theta[k] = theta[k] - scale * grad_k
        return theta

    def maml_gradients(self, theta0: Params, support: ClientExamples, query: ClientExamples,
                       inner_steps: int, inner_lr: float) -> Params:
        """Per-client MAML meta-gradient (Finn et al. 2017): grad_theta0 of the query loss
        after ``inner_steps`` full-batch SGD steps on the support set, second order through
        the inner steps (torch.func). Returns stacked (m, ...) gradients."""

        def meta_loss(params: Params, ucat: torch.Tensor, unum: torch.Tensor,
                      utags: torch.Tensor, s_items: torch.Tensor, s_labels: torch.Tensor,
                      s_mask: torch.Tensor, q_items: torch.Tensor, q_labels: torch.Tensor,
                      q_mask: torch.Tensor) -> torch.Tensor:
            p = params
            for _ in range(inner_steps):
                g = grad(self.bce)(p, ucat, unum, utags, s_items, s_labels, s_mask)
                p = {k: p[k] - inner_lr * g[k] for k in p}
            return self.bce(p, ucat, unum, utags, q_items, q_labels, q_mask)

        u = support.users
        s_mask = _mask(support)
        q_mask = _mask(query)
        return vmap(grad(meta_loss), in_dims=(None, 0, 0, 0, 0, 0, 0, 0, 0, 0))(
            theta0, u.categorical, u.numeric, u.multi_hot, support.items, support.labels,
            s_mask, query.items, query.labels, q_mask)

    def scores(self, stacked: Params, users: UserRows, n_items: int) -> torch.Tensor:
        """(b, n_items) logits of b users, each under its own parameters (b, ...)."""
        items = torch.arange(n_items)
        fn: Callable[..., torch.Tensor] = vmap(
            lambda p, c, n, t: self.logits(p, c, n, t, items), in_dims=(0, 0, 0, 0))
        with torch.no_grad():
            return fn(stacked, users.categorical, users.numeric, users.multi_hot)


def _mask(data: ClientExamples) -> torch.Tensor:
    width = data.items.shape[1]
    return (torch.arange(width)[None, :] < torch.as_tensor(data.counts)[:, None]).float()


def split_examples(data: ClientExamples, rng: np.random.Generator
                   ) -> tuple[ClientExamples, ClientExamples]:
    """Each client's examples halved at random (support, query); a client with one example
    keeps it in both halves."""
    counts = np.asarray(data.counts)
    order = epoch_orders(counts, data.items.shape[1], 1, rng)[0]
    n_s = np.maximum(1, counts // 2)
    n_q = np.maximum(1, counts - n_s)
    rows = np.arange(data.m)[:, None]
    items = data.items.numpy()[rows, order]
    labels = data.labels.numpy()[rows, order]
    q_start = np.where(counts > 1, n_s, 0)
    q_idx = np.minimum(q_start[:, None] + np.arange(items.shape[1])[None, :],
                       items.shape[1] - 1)
    support = ClientExamples(data.users, torch.from_numpy(items.copy()),
                             torch.from_numpy(labels.copy()), n_s)
    query = ClientExamples(data.users, torch.from_numpy(items[rows, q_idx].copy()),
                           torch.from_numpy(labels[rows, q_idx].copy()), n_q)
    return support, query
