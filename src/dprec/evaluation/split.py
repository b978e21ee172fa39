"""Splits: one interface (:class:`Split`) over leave-one-out, k-fold and user splits.

A split turns a dataset and a seed into folds; an evaluator (``dprec.evaluation.evaluator``)
knows which fold types it can score. Leave-one-out holds out one interaction per user.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from dprec.data.dataset import Dataset
from dprec.errors import DprecError

__all__ = [
    "KFoldSplit", "LATEST_RULE_DOC", "LeaveOneOut", "LeaveOneOutSplit", "RatingFold", "Split",
    "SplitRule", "StrongGeneralisationSplit", "UserFold", "UserSplit", "drawn_users",
    "leave_one_out", "user_fold",
]

SplitRule = Literal["latest", "random"]

LATEST_RULE_DOC = (
    "latest = the interaction with the largest (timestamp, item id) pair; ties in the last "
    "second are broken by the larger internal item id"
)


@dataclass(frozen=True)
class LeaveOneOut:
    """A leave-one-out split.

    ``train`` is the binary user x item matrix without the held-out interactions and
    ``train_ratings`` the same entries with their ratings; ``test_items[u]`` is user u's
    held-out item, or -1 when u has fewer than two interactions (such users are not
    evaluated). ``rule`` is "latest" or "random".
    """

    train: sp.csr_matrix
    test_items: np.ndarray
    rule: str
    train_ratings: sp.csr_matrix | None = None
    kept: np.ndarray | None = None
    """Mask over the dataset's stored interactions: True for those in ``train``."""

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
    ratings = sp.csr_matrix((m.data[keep].astype(np.float32), m.indices[keep], indptr),
                            shape=m.shape)
    return LeaveOneOut(train=train, test_items=test_items, rule=rule, train_ratings=ratings,
                       kept=keep)


class Split(ABC):
    """Turns (dataset, seed) into folds; every random choice from ``rng``."""

    kind: str = "split"

    @abstractmethod
    def folds(self, dataset: Dataset, rng: np.random.Generator) -> list[Any]:
        """The folds of this split for one seed's stream ``rng``."""

    @abstractmethod
    def describe(self) -> dict[str, object]:
        """What the results file records about the split."""


@dataclass(frozen=True)
class LeaveOneOutSplit(Split):
    """One fold: :func:`leave_one_out` with ``rule`` ("latest" or "random")."""

    rule: SplitRule = "latest"
    kind = "leave-one-out"

    def __post_init__(self) -> None:
        if self.rule not in ("latest", "random"):
            raise DprecError(f"split rule must be 'latest' or 'random', got {self.rule!r}")

    def folds(self, dataset: Dataset, rng: np.random.Generator) -> list[LeaveOneOut]:
        return [leave_one_out(dataset, self.rule, rng)]

    def describe(self) -> dict[str, object]:
        return {"kind": self.kind, "rule": self.rule,
                "rule_definition": LATEST_RULE_DOC if self.rule == "latest"
                else "uniform at random"}


@dataclass(frozen=True, eq=False)
class RatingFold:
    """One fold of explicit ratings.

    ``train`` is the user x item CSR matrix (float32 ratings, canonical, the dataset's shape)
    a system is fitted on; the test set is the pairs ``(test_users[j], test_items[j])`` with
    true ratings ``test_ratings[j]`` (int64, int64, float32), none of them in ``train``.
    """

    index: int
    train: sp.csr_matrix
    test_users: np.ndarray
    test_items: np.ndarray
    test_ratings: np.ndarray
    kind = "k-fold"

    def describe(self) -> dict[str, object]:
        return {"kind": self.kind, "fold": int(self.index), "n_train": int(self.train.nnz),
                "n_test": int(len(self.test_ratings))}


@dataclass(frozen=True, eq=False)
class UserFold(RatingFold):
    """The user split's fold: ``train`` = all ratings of ``train_users`` + ``fine_tune``.

    ``fine_tune`` (same shape as ``train``, a subset of it) holds the half of each test
    user's ratings that joins training; the other half is the test set. ``test_user_ids``
    are the evaluated users; ``moved_to_train`` counts users drawn for the test side with
    fewer than 2 ratings, which were put in ``train_users`` instead.
    """

    train_users: np.ndarray
    test_user_ids: np.ndarray
    fine_tune: sp.csr_matrix
    moved_to_train: int
    kind = "user"

    def describe(self) -> dict[str, object]:
        return {**super().describe(), "train_users": int(len(self.train_users)),
                "test_users": int(len(self.test_user_ids)),
                "n_fine_tune": int(self.fine_tune.nnz),
                "moved_to_train": int(self.moved_to_train),
                "moved_to_train_rule": "users drawn for test with fewer than 2 ratings "
                                       "are train users"}


def _ratings_subset(matrix: sp.csr_matrix, keep: np.ndarray) -> sp.csr_matrix:
    """The stored entries of canonical CSR ``matrix`` where ``keep`` (float32, same shape)."""
    rows = np.repeat(np.arange(matrix.shape[0], dtype=np.int64), np.diff(matrix.indptr))
    indptr = np.zeros(matrix.shape[0] + 1, np.int64)
    np.cumsum(np.bincount(rows[keep], minlength=matrix.shape[0]), out=indptr[1:])
    return sp.csr_matrix((matrix.data[keep].astype(np.float32), matrix.indices[keep], indptr),
                         shape=matrix.shape)


def _canonical(dataset: Dataset) -> sp.csr_matrix:
    m = dataset.matrix
    if not m.has_sorted_indices:
        m = m.sorted_indices()
    return m


@dataclass(frozen=True)
class KFoldSplit(Split):
    """k-fold cross-validation over ratings.

    A seeded permutation of the ratings is dealt round-robin into ``k`` folds, so every rating
    is in exactly one test fold and fold sizes differ by at most 1; fold f trains on the
    other k - 1 folds. Users or items rated only in a test fold are unknown to the model.
    """

    k: int = 5
    kind = "k-fold"

    def __post_init__(self) -> None:
        if isinstance(self.k, bool) or int(self.k) != self.k or self.k < 2:
            raise DprecError(f"k (number of folds) must be an integer >= 2, got {self.k!r}")

    def folds(self, dataset: Dataset, rng: np.random.Generator) -> list[RatingFold]:
        m = _canonical(dataset)
        k = int(self.k)
        if k > m.nnz:
            raise DprecError(f"k (number of folds) must be <= the number of ratings "
                             f"({m.nnz} in {dataset.name!r}), got {k}")
        users = np.repeat(np.arange(m.shape[0], dtype=np.int64), np.diff(m.indptr))
        fold_of = np.empty(m.nnz, np.int64)
        fold_of[rng.permutation(m.nnz)] = np.arange(m.nnz) % k
        out = []
        for f in range(k):
            test = fold_of == f
            out.append(RatingFold(
                index=f, train=_ratings_subset(m, ~test), test_users=users[test],
                test_items=m.indices[test].astype(np.int64),
                test_ratings=m.data[test].astype(np.float32)))
        return out

    def describe(self) -> dict[str, object]:
        return {"kind": self.kind, "k": int(self.k),
                "assignment": "seeded permutation of the ratings dealt round-robin into k "
                              "folds (sizes differ by at most 1)"}


@dataclass(frozen=True)
class UserSplit(Split):
    """The PrivRec protocol: a user split with each test user's ratings halved.

    Users are permuted (seeded); the first round(test_fraction * n_users) are test users, the
    rest train users. Test users with fewer than 2 ratings are moved to train. Each test
    user's n ratings are shuffled (seeded): the first floor(n / 2) join the training matrix
    (the fine-tune half), the remaining ceil(n / 2) are the test set. One fold.
    """

    test_fraction: float = 0.2
    kind = "user"

    def __post_init__(self) -> None:
        f = self.test_fraction
        if isinstance(f, bool) or not (isinstance(f, int | float) and 0 < f < 1):
            raise DprecError(f"test_fraction must be in (0, 1), got {f!r}")

    def folds(self, dataset: Dataset, rng: np.random.Generator) -> list[UserFold]:
        m = _canonical(dataset)
        drawn = drawn_users(m.shape[0], self.test_fraction, rng)
        counts = np.diff(m.indptr)
        return [user_fold(m, drawn, counts // 2, counts >= 2, rng, dataset.name,
                          f"2 or more ratings (test_fraction={self.test_fraction})")]

    def describe(self) -> dict[str, object]:
        return {"kind": self.kind, "test_fraction": float(self.test_fraction),
                "halving": "each test user's ratings shuffled; the first floor(n/2) train "
                           "(fine-tune), the remaining ceil(n/2) are the test set",
                "min_test_user_ratings": 2}


@dataclass(frozen=True)
class StrongGeneralisationSplit(Split):
    """Strong generalisation: the held-out users are never trained on (Liang et al.,
    "Variational Autoencoders for Collaborative Filtering", WWW 2018, §4.2; the protocol of
    DPALS, Chien et al., ICML 2021, §5).

    Users are permuted (seeded); the first ``held_out`` of them (a count >= 1, or a fraction
    in (0, 1), rounded) are test users. Each test user's n ratings are shuffled (seeded):
    the last floor(``test_prop`` * n) are the test set (Liang et al.'s
    ``int(test_prop * n)``), the others are the fold-in part that the device scores from
    and that no model trains on (:meth:`UserRankingEvaluator.train_matrix` keeps the train
    users' rows only). Test users with floor(test_prop * n) = 0 are train users. One fold.
    """

    held_out: int | float = 0.2
    test_prop: float = 0.2
    kind = "strong"

    def __post_init__(self) -> None:
        h, p = self.held_out, self.test_prop
        if isinstance(h, bool) or not isinstance(h, int | float) or not (
                (isinstance(h, int) and h >= 1) or (isinstance(h, float) and 0 < h < 1)):
            raise DprecError(f"held_out must be a user count >= 1 or a fraction in (0, 1), "
                             f"got {h!r}")
        if isinstance(p, bool) or not (isinstance(p, int | float) and 0 < p < 1):
            raise DprecError(f"test_prop must be in (0, 1), got {p!r}")

    def folds(self, dataset: Dataset, rng: np.random.Generator) -> list[UserFold]:
        m = _canonical(dataset)
        h = self.held_out
        drawn = drawn_users(m.shape[0], float(h), rng,
                            n_test=int(h) if isinstance(h, int) else None)
        counts = np.diff(m.indptr)
        n_test = np.floor(self.test_prop * counts).astype(np.int64)
        return [user_fold(m, drawn, counts - n_test, n_test >= 1, rng, dataset.name,
                          f"{int(np.ceil(1 / self.test_prop))} or more ratings "
                          f"(test_prop={self.test_prop})")]

    def describe(self) -> dict[str, object]:
        return {"kind": self.kind, "held_out": self.held_out, "test_prop": self.test_prop,
                "fold_in": "each held-out user's ratings shuffled; floor(test_prop * n) are "
                           "the test set, the rest is the user's fold-in history, scored on "
                           "the device and never trained on",
                "train": "the other users' ratings only"}


def drawn_users(n_users: int, test_fraction: float, rng: np.random.Generator,
                n_test: int | None = None) -> np.ndarray:
    """The users drawn for the test side: the first ``n_test`` (default
    round(test_fraction * n_users)) of a seeded permutation (a bool mask); one
    ``rng.permutation`` draw."""
    if n_test is None:
        n_test = int(np.floor(test_fraction * n_users + 0.5))
    if not 1 <= n_test <= n_users - 1:
        raise DprecError(f"test_fraction={test_fraction} of {n_users} users gives "
                         f"{n_test} test users; need between 1 and n_users - 1")
    drawn = np.zeros(n_users, bool)
    drawn[rng.permutation(n_users)[:n_test]] = True
    return drawn


def user_fold(m: sp.csr_matrix, drawn: np.ndarray, n_fold_in: np.ndarray,
              eligible: np.ndarray, rng: np.random.Generator, name: str,
              requirement: str) -> UserFold:
    """The :class:`UserFold` of canonical ``m``: the ``drawn & eligible`` users are test
    users; each one's ratings are shuffled (one ``rng.random(nnz)`` draw, ties by position)
    and the first ``n_fold_in[user]`` join training as the fine-tune (fold-in) part, the
    rest are the test set. Drawn users that are not ``eligible`` are train users; none
    eligible is an error naming the ``requirement``."""
    n_users = m.shape[0]
    counts = np.diff(m.indptr)
    is_test = drawn & eligible
    if not is_test.any():
        raise DprecError(f"no test user of {name!r} has {requirement}")
    rows = np.repeat(np.arange(n_users, dtype=np.int64), counts)
    order = np.lexsort((rng.random(m.nnz), rows))
    rank = np.empty(m.nnz, np.int64)
    rank[order] = np.arange(m.nnz) - m.indptr[rows[order]]
    entry_test_user = is_test[rows]
    fine = entry_test_user & (rank < n_fold_in[rows])
    test = entry_test_user & ~fine
    return UserFold(
        index=0, train=_ratings_subset(m, ~test), test_users=rows[test],
        test_items=m.indices[test].astype(np.int64),
        test_ratings=m.data[test].astype(np.float32),
        train_users=np.flatnonzero(~is_test).astype(np.int64),
        test_user_ids=np.flatnonzero(is_test).astype(np.int64),
        fine_tune=_ratings_subset(m, fine),
        moved_to_train=int((drawn & ~is_test).sum()))
