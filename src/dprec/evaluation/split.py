"""Leave-one-out splits (one held-out interaction per user)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import scipy.sparse as sp

from dprec.data.dataset import Dataset
from dprec.errors import DprecError

SplitRule = Literal["latest", "random"]

LATEST_RULE_DOC = (
    "latest = the interaction with the largest (timestamp, item id) pair; ties in the last "
    "second are broken by the larger internal item id"
)


@dataclass(frozen=True)
class LeaveOneOut:
    """A leave-one-out split.

    ``train`` is the binary user x item matrix without the held-out interactions;
    ``test_items[u]`` is user u's held-out item, or -1 when u has fewer than two interactions
    (such users are not evaluated). ``rule`` is "latest" or "random".
    """

    train: sp.csr_matrix
    test_items: np.ndarray
    rule: str

    @property
    def test_users(self) -> np.ndarray:
        return np.flatnonzero(self.test_items >= 0)

    def describe(self) -> dict[str, object]:
        return {
            "kind": "leave-one-out",
            "rule": self.rule,
            "rule_definition": LATEST_RULE_DOC if self.rule == "latest" else "uniform at random",
            "test_users": int(len(self.test_users)),
        }


def leave_one_out(
    dataset: Dataset, rule: SplitRule = "latest", rng: np.random.Generator | None = None
) -> LeaveOneOut:
    """Hold out one interaction per user with at least two interactions.

    ``rule="latest"`` holds out the largest (timestamp, item id) pair (deterministic; needs
    timestamps); ``rule="random"`` holds out one uniformly at random (needs ``rng``).
    """
    m = dataset.matrix
    n_users = m.shape[0]
    counts = np.diff(m.indptr)
    eligible = counts >= 2
    rows = np.repeat(np.arange(n_users), counts)
    if rule == "latest":
        if dataset.timestamps is None:
            raise DprecError(
                f"split rule 'latest' needs timestamps; dataset {dataset.name!r} has none "
                "(use --split random)"
            )
        order = np.lexsort((m.indices, dataset.timestamps, rows))
        last = m.indptr[1:] - 1
        held = np.full(n_users, -1, np.int64)
        held[eligible] = order[last[eligible]]
    elif rule == "random":
        if rng is None:
            raise DprecError("split rule 'random' needs a random generator")
        offsets = np.floor(rng.random(n_users) * counts).astype(np.int64)
        held = np.where(eligible, m.indptr[:-1] + offsets, -1)
    else:
        raise DprecError(f"split rule must be 'latest' or 'random', got {rule!r}")
    test_items = np.full(n_users, -1, np.int64)
    test_items[eligible] = m.indices[held[eligible]]
    keep = np.ones(m.nnz, bool)
    keep[held[eligible]] = False
    data = np.ones(int(keep.sum()), np.float32)
    indptr = np.zeros(n_users + 1, np.int64)
    np.cumsum(np.bincount(rows[keep], minlength=n_users), out=indptr[1:])
    train = sp.csr_matrix((data, m.indices[keep], indptr), shape=m.shape)
    return LeaveOneOut(train=train, test_items=test_items, rule=rule)
