"""The PrivRec ranking protocol on a user split (Chen et al., PrivRec, §3.3).

The model is trained without the test users (:meth:`UserRankingEvaluator.train_matrix`);
each test user personalises it on the device from the fine-tune half of their ratings
(``Ranker.score`` with ``users = -1``), and every held-out positive of the other half is
ranked against all the items the user never interacted with. HR@K and NDCG@K are averaged
over each user's held-out positives, then over users.

That is the paper's reading, and the default (:data:`HITS_READINGS`): "for each positive
user-item interaction in the test set D_test, ... (1) We compute ranking scores for the
positive item as well as the negative items that the user has never interacted with. (2) We
form a top-k recommendation list by picking k items with the highest ranking scores. If the
ground-truth item appears in the top-k recommendation list, we have a hit" (§3.3). The other
readings of "Hits@K" are options, computed on the same run and the same ranks.
"""

from __future__ import annotations

import logging
import math
import numbers
from dataclasses import dataclass, field, replace
from typing import ClassVar

import numpy as np
import scipy.sparse as sp

from dprec.data.dataset import Dataset
from dprec.errors import DprecError
from dprec.evaluation.evaluator import Evaluator, Metrics
from dprec.evaluation.metrics import (
    FULL_LIST,
    LIST_KS,
    best_rank_metrics,
    covered_items,
    group_min,
    grouped_ranking_metrics,
    held_out_share_metrics,
    list_metrics,
    ordered_rank,
    rank_with_random_ties,
)
from dprec.evaluation.outputs import checked_output
from dprec.evaluation.split import UserFold, _ratings_subset
from dprec.random import derive_generator
from dprec.selection import top_k
from dprec.systems.base import Ranker, Recommender, Task

__all__ = [
    "BATCH_USERS", "BLOCK_BYTES", "HITS_READINGS", "PROTOCOL", "UserRankingEvaluator",
    "UserTargets", "evaluate_user_ranking", "target_negatives", "user_targets",
]

log = logging.getLogger(__name__)

PROTOCOL = ("user split; test users fine-tune on half of their ratings on the device; each "
            "held-out positive ranked against all never-interacted items; per-user mean, then "
            "mean over users")
BATCH_USERS = 256
"""Test users scored per ``Ranker.score`` call."""
BLOCK_BYTES = 64 << 20
"""Upper bound on one (users, n_items) float64 score block; fewer users per call if needed."""
HITS_READINGS: dict[str, str] = {
    "per-positive": "full",
    "per-user": "full-per-user",
    "all-held-out": "full-all-held-out",
    "sampled": "sampled",
    "optimistic-ties": "full-optimistic-ties",
}
"""The readings of PrivRec's Hits@K (and NDCG@K), by name, to their key in the metrics:

- ``per-positive`` (the paper's, the default): each held-out positive ranked against all
  never-interacted items; per-user mean, then mean over users with a positive;
- ``per-user``: one hit per user when any held-out positive is in the top K of the
  never-interacted items and the user's held-out positives (the minimum rank of the
  user's positives; :func:`~dprec.evaluation.metrics.best_rank_metrics`);
- ``all-held-out``: Eq. (10) with |D_test| = all the user's held-out ratings, positive or
  not, averaged over every test user
  (:func:`~dprec.evaluation.metrics.held_out_share_metrics`);
- ``sampled``: each held-out positive ranked against ``n_negatives`` never-interacted items
  drawn uniformly per positive (NCF's 1 + 99), per-user mean, then mean over users;
- ``optimistic-ties``: as ``per-positive``, but a target ties in its favour (rank = the
  never-interacted items scoring strictly higher), what an evaluation that counts only
  strictly higher scores computes; a diagnostic for scorers with many tied items (PrivRec's
  items are genres only), not a protocol to report.
"""


@dataclass(frozen=True, eq=False)
class UserTargets:
    """What every system evaluated on one :class:`UserFold` shares.

    Row r of ``seen`` and ``targets`` (CSR, n_items columns) belongs to test user
    ``users[r]``: ``seen`` holds every item the user interacted with (both halves, any
    rating), ``targets`` the held-out items rated above the threshold. ``users`` are the
    test users with at least one target; ``n_test_users`` counts all of them.
    """

    users: np.ndarray
    seen: sp.csr_matrix
    targets: sp.csr_matrix
    n_test_users: int
    test_user_ids: np.ndarray | None = None
    """Every test user, with or without a target (``all-held-out`` reading)."""
    held_out: np.ndarray | None = None
    """Per ``test_user_ids`` entry: how many ratings the user has held out, any rating."""
    negatives: np.ndarray | None = None
    """(targets.nnz, n) sampled negatives per target in CSR order (``sampled`` reading)."""

    @property
    def n_without_targets(self) -> int:
        return self.n_test_users - len(self.users)

    def describe(self) -> dict[str, object]:
        return {"test_users": self.n_test_users,
                "test_users_with_targets": int(len(self.users)),
                "test_users_without_targets": self.n_without_targets,
                "targets": int(self.targets.nnz)}


def user_targets(fold: UserFold, threshold: float) -> UserTargets:
    """The targets (held-out ratings > ``threshold``) and interacted items of the test users."""
    n_users, n_items = fold.train.shape
    test_ids = np.asarray(fold.test_user_ids, dtype=np.int64)
    local = np.full(n_users, -1, np.int64)
    local[test_ids] = np.arange(len(test_ids))
    owner = local[np.asarray(fold.test_users, dtype=np.int64)]
    if np.any(owner < 0):
        raise DprecError("every test rating of the fold must belong to one of its "
                         "test_user_ids")
    items = np.asarray(fold.test_items, dtype=np.int64)
    shape = (len(test_ids), n_items)

    def structure(rows: np.ndarray, cols: np.ndarray) -> sp.csr_matrix:
        m = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=shape)
        m.sum_duplicates()
        m.data[:] = 1.0
        return m

    fine = sp.csr_matrix(fold.fine_tune)[test_ids].tocoo()
    seen = structure(np.concatenate([fine.row.astype(np.int64), owner]),
                     np.concatenate([fine.col.astype(np.int64), items]))
    positive = np.asarray(fold.test_ratings, dtype=np.float64) > threshold
    targets = structure(owner[positive], items[positive])
    has = np.flatnonzero(np.diff(targets.indptr) > 0)
    held_out = np.bincount(owner, minlength=len(test_ids))
    return UserTargets(users=test_ids[has], seen=seen[has], targets=targets[has],
                       n_test_users=len(test_ids), test_user_ids=test_ids, held_out=held_out)


def target_negatives(targets: UserTargets, n_negatives: int,
                     rng: np.random.Generator) -> np.ndarray:
    """(targets.nnz, ``n_negatives``) items: for each target (CSR order), ``n_negatives``
    distinct items its user never interacted with (neither half, any rating), uniform without
    replacement (the smallest random keys, as :func:`~dprec.evaluation.candidates.
    sample_negatives`). Draw once per (dataset, fold, seed), shared by every system."""
    n_items = targets.targets.shape[1]
    seen_count = np.diff(targets.seen.indptr)
    if len(seen_count) and seen_count.max() + n_negatives > n_items:
        worst = int(targets.users[np.argmax(seen_count)])
        raise DprecError(f"test user {worst} has only {n_items - int(seen_count.max())} "
                         f"never-interacted items, fewer than n_negatives={n_negatives}; "
                         "lower n_negatives")
    row_of = np.repeat(np.arange(len(targets.users)), np.diff(targets.targets.indptr))
    out = np.empty((len(row_of), n_negatives), np.int64)
    step = max(1, BLOCK_BYTES // (8 * n_items))
    for start in range(0, len(row_of), step):
        rows = row_of[start:start + step]
        keys = rng.random((len(rows), n_items))
        seen = targets.seen[rows]
        keys[np.repeat(np.arange(len(rows)), np.diff(seen.indptr)), seen.indices] = np.inf
        out[start:start + len(rows)] = top_k(np.negative(keys, out=keys), n_negatives)
    return out


def _list_batch(scores: np.ndarray, tgt: sp.csr_matrix, target_scores: np.ndarray,
                depth: int, step: int) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                np.ndarray]:
    """One batch of the full top-K lists (issue 33): each user's top ``depth`` over the
    items they never interacted with and their held-out positives (``scores`` has every
    interacted item NaN, targets included; ``tgt`` the batch's targets, ``target_scores``
    their scores in CSR order), ties by :func:`dprec.selection.top_k`. Returns
    (relevant (b, depth), the rank of each user's first positive, the lists, which list
    entries are real candidates)."""
    b = scores.shape[0]
    row_of = np.repeat(np.arange(b), np.diff(tgt.indptr))
    cand = scores.copy()
    cand[row_of, tgt.indices] = target_scores
    top = top_k(cand, depth)
    is_target = np.zeros(cand.shape, bool)
    is_target[row_of, tgt.indices] = True
    ranks = np.concatenate([ordered_rank(target_scores[c:c + step], tgt.indices[c:c + step],
                                         cand[row_of[c:c + step]])
                            for c in range(0, len(row_of), step)] or [np.zeros(0, np.int64)])
    valid = ~np.isnan(np.take_along_axis(cand, top, axis=1))
    return (np.take_along_axis(is_target, top, axis=1), group_min(ranks, row_of), top, valid)


def _rule(matrix: sp.csr_matrix, threshold: float, uses_ratings: bool,
          rows: np.ndarray | None = None) -> sp.csr_matrix:
    """The entries of ``matrix`` a model sees: all rows, or only ``rows`` (others emptied);
    ratings as they are if ``uses_ratings``, else the positives (> threshold) as 1.0."""
    m = sp.csr_matrix(matrix)
    if not m.has_canonical_format:
        m = m.copy()
        m.sum_duplicates()
    keep = np.ones(m.nnz, bool)
    if rows is not None:
        on = np.zeros(m.shape[0], bool)
        on[rows] = True
        keep &= np.repeat(on, np.diff(m.indptr))
    if not uses_ratings:
        keep &= m.data > threshold
    out = _ratings_subset(m, keep)
    if not uses_ratings:
        out.data[:] = 1.0
    return out


def evaluate_user_ranking(
    model: Ranker,
    fold: UserFold,
    targets: UserTargets,
    rng: np.random.Generator,
    ks: tuple[int, ...],
    threshold: float,
    batch_users: int = BATCH_USERS,
    readings: tuple[str, ...] = ("per-positive",),
    list_ks: tuple[int, ...] = LIST_KS,
) -> Metrics:
    """HR@K and NDCG@K of ``model`` under the PrivRec protocol; returns {"full": {...}}, the
    full top-K lists ("full-topk": each test user's top K over the items they never
    interacted with and their held-out positives, ties by :func:`dprec.selection.top_k`;
    HR@K, Recall@K over min(K, positives), NDCG@K, MRR, Coverage@K; no random draw), plus
    one entry per other reading asked for (:data:`HITS_READINGS`; ``sampled`` needs
    ``targets.negatives``).

    Each test user with a target is scored over all items from their fine-tune half
    (``users = -1``; ratings or positives as ``model.uses_ratings`` says). A side-feature
    model gets the users' own indices instead: it reads their side features, which the
    device holds, and has no per-user parameters to look up. Every target is
    ranked against the items the user never interacted with, ties broken at random by
    ``rng`` (one draw per target, in (user, item) order, so batching does not change the
    result); the metrics are averaged over each user's targets, then over users. The
    ``per-user`` and ``all-held-out`` readings reuse these ranks, ``optimistic-ties`` counts
    the strictly higher candidates; ``sampled`` ranks each
    target against its negatives with ties broken by a child stream of ``rng``
    (``rng.spawn``), so asking for it leaves the other readings unchanged.
    """
    unknown = sorted(set(readings) - set(HITS_READINGS))
    if unknown:
        raise DprecError(f"unknown Hits@K readings {unknown}; choose from "
                         f"{sorted(HITS_READINGS)}")
    sampled = "sampled" in readings
    if sampled and (targets.negatives is None
                    or len(targets.negatives) != targets.targets.nnz):
        raise DprecError("the sampled reading needs one row of negatives per target: "
                         "prepare the targets with UserRankingEvaluator(readings=...)")
    sampled_rng = rng.spawn(1)[0] if sampled else None
    n_items = fold.train.shape[1]
    if int(batch_users) != batch_users or batch_users < 1:
        raise DprecError(f"batch_users must be an integer >= 1, got {batch_users}")
    step = max(1, min(int(batch_users), BLOCK_BYTES // (8 * n_items)))
    history = _rule(fold.fine_tune, threshold, model.uses_ratings)[targets.users]
    col = _collect(model, targets, history, n_items, step, rng, sampled_rng,
                   "optimistic-ties" in readings, tuple(list_ks))
    return _readings_metrics(col, targets, ks, readings)


@dataclass
class _Collected:
    """What :func:`evaluate_user_ranking` gathers batch by batch, in target (CSR) order:
    each target's rank (random ties), optimistic rank and sampled rank, its user; each
    user's top-``depth`` relevance and first positive's rank; the items each top K covers."""

    n_items: int
    depth: int
    ranks: list[np.ndarray] = field(default_factory=list)
    optimistic: list[np.ndarray] = field(default_factory=list)
    sampled: list[np.ndarray] = field(default_factory=list)
    owners: list[np.ndarray] = field(default_factory=list)
    relevant: list[np.ndarray] = field(default_factory=list)
    first_ranks: list[np.ndarray] = field(default_factory=list)
    list_ks: tuple[int, ...] = LIST_KS
    covered: dict[int, np.ndarray] = field(init=False)

    def __post_init__(self) -> None:
        self.covered = {k: np.zeros(self.n_items, bool) for k in self.list_ks}


def _collect(model: Ranker, targets: UserTargets, history: sp.csr_matrix, n_items: int,
             step: int, rng: np.random.Generator, sampled_rng: np.random.Generator | None,
             optimistic: bool, list_ks: tuple[int, ...] = LIST_KS) -> _Collected:
    """Score the test users ``step`` at a time and rank their targets: ties drawn from
    ``rng`` in (user, item) order, the sampled reading's from ``sampled_rng`` (None: not
    asked for), the optimistic ranks if asked for."""
    col = _Collected(n_items, min(max(list_ks), n_items), list_ks=list_ks)
    first = 0
    for start in range(0, len(targets.users), step):
        stop = min(start + step, len(targets.users))
        scores, tgt, row_of, target_scores = _batch_scores(model, history, targets, start,
                                                           stop, n_items)
        for c in range(0, len(row_of), step):
            rows = row_of[c:c + step]
            col.ranks.append(rank_with_random_ties(target_scores[c:c + step], scores[rows],
                                                   rng))
            if optimistic:
                col.optimistic.append(np.sum(scores[rows] > target_scores[c:c + step, None],
                                             axis=1))
        if sampled_rng is not None and targets.negatives is not None:
            negs = targets.negatives[first:first + len(row_of)]
            col.sampled.append(rank_with_random_ties(
                target_scores, scores[row_of[:, None], negs], sampled_rng))
        rel, first_rank, top, valid = _list_batch(scores, tgt, target_scores, col.depth, step)
        col.relevant.append(rel)
        col.first_ranks.append(first_rank)
        for k in col.list_ks:
            col.covered[k] |= covered_items(top[:, :k], n_items, valid[:, :k])
        first += len(row_of)
        col.owners.append(targets.users[start:stop][row_of])
    return col


def _batch_scores(model: Ranker, history: sp.csr_matrix, targets: UserTargets, start: int,
                  stop: int, n_items: int
                  ) -> tuple[np.ndarray, sp.csr_matrix, np.ndarray, np.ndarray]:
    """Test users ``start:stop`` scored from their fine-tune ``history`` (their own indices
    for a side-feature model, else -1). Returns (the scores, every interacted item NaN; the
    batch's targets; each target's row; the targets' scores in CSR order)."""
    b = stop - start
    users = (targets.users[start:stop] if model.uses_side_features
             else np.full(b, -1, np.int64))
    scores = checked_output(model.score(history[start:stop], users=users), (b, n_items),
                            f"{model.name}.score", "scores")
    tgt = targets.targets[start:stop]
    row_of = np.repeat(np.arange(b), np.diff(tgt.indptr))
    target_scores = scores[row_of, tgt.indices]
    seen = targets.seen[start:stop]
    scores[np.repeat(np.arange(b), np.diff(seen.indptr)), seen.indices] = np.nan
    return scores, tgt, row_of, target_scores


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    """The batches' ranks end to end (an empty int64 array if there were none)."""
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def _readings_metrics(col: _Collected, targets: UserTargets, ks: tuple[int, ...],
                      readings: tuple[str, ...]) -> Metrics:
    """The metrics of :func:`evaluate_user_ranking` from what its batches collected: the
    paper's reading under ``"full"``, the full top-K lists, then each other reading asked
    for (:data:`HITS_READINGS`)."""
    r, u = _joined(col.ranks), _joined(col.owners)
    out: Metrics = {"full": grouped_ranking_metrics(r, u, ks)}
    out[FULL_LIST] = list_metrics(
        np.concatenate(col.relevant) if col.relevant else np.zeros((0, col.depth), bool),
        np.diff(targets.targets.indptr), _joined(col.first_ranks), col.covered,
        tuple(k for k in col.list_ks if k <= col.depth))
    if "per-user" in readings:
        out[HITS_READINGS["per-user"]] = best_rank_metrics(r, u, ks)
    if "all-held-out" in readings:
        if targets.test_user_ids is None or targets.held_out is None:
            raise DprecError("the all-held-out reading needs the targets' test_user_ids and "
                             "held_out counts (user_targets fills them)")
        out[HITS_READINGS["all-held-out"]] = held_out_share_metrics(
            r, u, targets.test_user_ids, targets.held_out, ks)
    if "optimistic-ties" in readings:
        out[HITS_READINGS["optimistic-ties"]] = grouped_ranking_metrics(
            _joined(col.optimistic), u, ks)
    if "sampled" in readings:
        out[HITS_READINGS["sampled"]] = grouped_ranking_metrics(_joined(col.sampled), u, ks)
    return out


@dataclass(frozen=True)
class UserRankingEvaluator(Evaluator):
    """The PrivRec protocol on a :class:`~dprec.evaluation.split.UserSplit` fold.

    Positives are ratings > ``threshold``. Systems are trained on the train users' rows only;
    each test user fine-tunes from their fine-tune half; every held-out positive is ranked
    against all never-interacted items; HR@K and NDCG@K are per-user means, then means over
    the test users with at least one held-out positive. ``readings`` adds other readings of
    Hits@K on the same ranks (:data:`HITS_READINGS`); the paper's, ``per-positive``, is always
    reported, under ``"full"``.
    """

    ks: tuple[int, ...] = (5, 10, 20, 30)
    """Cut-offs K of HR@K and NDCG@K."""
    threshold: float = 3.0
    """A rating is positive when it is > threshold (ML-1M: 4 and 5)."""
    readings: tuple[str, ...] = ("per-positive",)
    """Readings of Hits@K reported (keys of :data:`HITS_READINGS`)."""
    n_negatives: int = 99
    """Sampled negatives per held-out positive (``sampled`` reading only)."""
    list_ks: tuple[int, ...] = LIST_KS
    """Cut-offs K of the full top-K list metrics (strong generalisation: 20, 50, 100)."""
    task: ClassVar[Task] = "ranking"

    def __post_init__(self) -> None:
        ks = tuple(self.ks) if isinstance(self.ks, tuple | list) else ()
        if not ks or not all(_is_int(k) and k >= 1 for k in ks):
            raise DprecError(f"ks must be a non-empty list of integers >= 1, got {self.ks!r}")
        object.__setattr__(self, "ks", tuple(int(k) for k in ks))
        t = self.threshold
        if isinstance(t, bool) or not isinstance(t, numbers.Real) or not math.isfinite(t):
            raise DprecError(f"threshold must be a finite number, got {t!r}")
        object.__setattr__(self, "threshold", float(t))
        readings = (tuple(self.readings) if isinstance(self.readings, tuple | list)
                    else (self.readings,))
        unknown = [r for r in readings if r not in HITS_READINGS]
        if not readings or unknown:
            raise DprecError(f"readings must be a non-empty list of {sorted(HITS_READINGS)}, "
                             f"got {self.readings!r}")
        object.__setattr__(self, "readings", tuple(dict.fromkeys(readings)))
        n = self.n_negatives
        if not _is_int(n) or n < 1:
            raise DprecError(f"n_negatives must be an integer >= 1, got {n!r}")
        lks = tuple(self.list_ks) if isinstance(self.list_ks, tuple | list) else ()
        if not lks or not all(_is_int(k) and k >= 1 for k in lks):
            raise DprecError(f"list_ks must be a non-empty list of integers >= 1, got "
                             f"{self.list_ks!r}")
        object.__setattr__(self, "list_ks", tuple(sorted({int(k) for k in lks})))
        if "sampled" in self.readings and max(self.ks) > n + 1:
            raise DprecError(f"K={max(self.ks)} is larger than the sampled candidate list "
                             f"({n + 1} items); lower K or raise n_negatives")

    def train_matrix(self, fold: UserFold, model: Recommender | None = None) -> sp.csr_matrix:
        """The train users' rows of ``fold.train`` (test users' rows empty): ratings as they
        are for a model with ``uses_ratings``, else the positives (> threshold) as 1.0."""
        _check_fold(fold, _label(fold))
        uses_ratings = bool(getattr(model, "uses_ratings", False))
        return _rule(fold.train, self.threshold, uses_ratings, rows=fold.train_users)

    def prepare(self, dataset: Dataset, fold: UserFold, seed: int,
                split_kind: str) -> UserTargets:
        _check_fold(fold, split_kind)
        targets = user_targets(fold, self.threshold)
        if not len(targets.users):
            raise DprecError(
                f"no test user of {dataset.name!r} has a held-out rating > threshold "
                f"({self.threshold:g}); implicit-feedback data (every rating 1) needs "
                "threshold < 1")
        if targets.n_without_targets:
            log.info("%d of %d test users have no held-out rating > %g and are not averaged",
                     targets.n_without_targets, targets.n_test_users, self.threshold)
        if "sampled" in self.readings:
            negatives = target_negatives(targets, int(self.n_negatives), derive_generator(
                seed, "user-negatives", dataset.name, int(fold.index)))
            targets = replace(targets, negatives=negatives)
        return targets

    def evaluate(self, model: Recommender, fold: UserFold, prepared: UserTargets | None,
                 rng: np.random.Generator) -> Metrics:
        """{"full": {"HR@K": .., "NDCG@K": ..}}; ``prepared`` None computes the targets."""
        if not isinstance(model, Ranker):
            raise DprecError(f"{model.name} is a {model.task} system; ranking needs a ranker")
        if not model.supports_unknown_users:
            raise DprecError(f"{model.name} cannot score users unseen at training "
                             "(supports_unknown_users is False); the user-split protocol "
                             "scores test users from their fine-tune half alone")
        _check_fold(fold, _label(fold))
        targets = prepared if prepared is not None else user_targets(fold, self.threshold)
        return evaluate_user_ranking(model, fold, targets, rng, self.ks, self.threshold,
                                     readings=self.readings, list_ks=self.list_ks)

    def describe(self) -> dict[str, object]:
        return {
            "task": "ranking",
            "protocol": PROTOCOL,
            "train": "train users' ratings only (test users' rows empty); systems without "
                     "uses_ratings get the positives as 1",
            "positive": f"rating > {self.threshold:g}",
            "threshold": self.threshold,
            "full": "each held-out positive against all items the user never interacted "
                    "with (either half, any rating)",
            "ties": "broken uniformly at random with the run's seed",
            "ks": list(self.ks),
            "readings": {r: HITS_READINGS[r] for r in self.readings},
            FULL_LIST: {"list": "each test user's top-K over the items they never "
                                "interacted with and their held-out positives",
                        "ks": list(self.list_ks),
                        "ties": "larger score first, then the smaller item index "
                                "(dprec.selection.top_k); no random draw",
                        "metrics": "HR@K, Recall@K (/ min(K, positives)), NDCG@K, MRR of "
                                   "the first positive, Coverage@K"},
            **({"sampled": {"negatives_per_positive": self.n_negatives,
                            "drawn": "once per (dataset, split, seed), uniform over the "
                                     "user's never-interacted items"}}
               if "sampled" in self.readings else {}),
        }

    def describe_fold(self, fold: UserFold, prepared: UserTargets) -> dict[str, object]:
        return prepared.describe() if isinstance(prepared, UserTargets) else {}


def _is_int(k: object) -> bool:
    return isinstance(k, numbers.Integral) and not isinstance(k, bool)


def _label(fold: object) -> str:
    return str(getattr(fold, "kind", type(fold).__name__))


def _check_fold(fold: object, label: str) -> None:
    if not isinstance(fold, UserFold):
        raise DprecError(f"user-ranking evaluation (PrivRec protocol) needs a user split "
                         f"(UserSplit), got {label}")
