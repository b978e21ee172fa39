"""The experiment a system is evaluated in, chosen from its task and the requested split.

- ranking: leave-one-out (the latest or a random interaction per user), sampled and full
  ranking metrics;
- rating: k-fold or an 80/20 user split, RMSE/MAE;
- privrec: the PrivRec protocol (80/20 user split, half of each test user's data
  fine-tuned on the device, HR/NDCG@5..30 against every unseen item);
- strong: strong generalisation (Liang et al., WWW 2018; the DPALS protocol): held-out users
  never trained on, each folded in on the device from 80% of their data (one user solve for
  a factor model), Recall@20/@50 (over min(K, positives)) and NDCG@100 against every item
  outside the fold-in part.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from dprec.errors import DprecError
from dprec.evaluation.ranking import RankingEvaluator
from dprec.evaluation.rating import RatingEvaluator
from dprec.evaluation.runner import Experiment
from dprec.evaluation.split import (
    KFoldSplit,
    LeaveOneOutSplit,
    StrongGeneralisationSplit,
    UserSplit,
)
from dprec.evaluation.user_ranking import UserRankingEvaluator
from dprec.systems.registry import spec

if TYPE_CHECKING:
    from dprec.data.dataset import Dataset

__all__ = ["STRONG_LIST_KS", "Task", "check_folds", "experiment_for", "one_run_split",
           "strong_split", "task_of"]

Task = Literal["ranking", "rating", "privrec", "strong"]

STRONG_LIST_KS: tuple[int, ...] = (10, 20, 50, 100)
"""The full-list cut-offs of strong generalisation: Liang et al.'s Recall@20, Recall@50 and
NDCG@100, and the headline's HR@10 / NDCG@10."""
STRONG_THRESHOLD = 3.5
"""A rating > 3.5 is a positive (Liang et al.'s ML-20M preprocessing); implicit data (no
rating scale) counts every interaction."""


def task_of(system: str, split: str | None) -> Task:
    """The experiment a system runs in: its task, or "privrec" for side-feature systems and
    for a ranking system asked for the user split."""
    s = spec(system)
    if s.task == "ranking" and split is not None and split.split(":")[0] == "strong":
        if s.protocol == "user-split":
            raise DprecError(f"{system} uses side features on the PrivRec protocol; strong "
                             "generalisation is for collaborative ranking systems")
        return "strong"
    if s.protocol == "user-split" or (s.task == "ranking" and split == "user"):
        return "privrec"
    return s.task  # type: ignore[return-value]


def one_run_split(task: str, split: str | None) -> str | None:
    """The split of an experiment that trains once per seed (``dprec simulate``: one
    protocol run each): ``split`` if given, else the user split for a rating system (its
    default, k-fold, trains k times), else the task's default (None). k-fold is refused."""
    if task != "rating":
        return split
    if split == "kfold":
        raise DprecError("a simulation trains once per seed, k-fold trains k times: use "
                         "--split user (the default for a rating system)")
    return split or "user"


def check_folds(task: str, split: str | None, folds: int | None) -> None:
    """``folds`` sets k of k-fold, so it is an error anywhere else (leave-one-out ranking,
    the user split), rather than silently ignored."""
    if folds is None:
        return
    if task != "rating" or (split or "kfold") != "kfold":
        how = ("the PrivRec user split" if task == "privrec" else "leave-one-out (one fold "
               "per seed)" if task == "ranking" else "strong generalisation (one fold per "
               "seed)" if task == "strong" else "the user split")
        raise DprecError(f"--folds sets k of k-fold rating runs; this run uses {how}: drop "
                         "--folds")
    if folds < 2:
        raise DprecError(f"--folds must be >= 2, got {folds}")


def experiment_for(task: str, ds: Dataset, seeds: int, split: str | None, negatives: int,
                   folds: int | None) -> Experiment:
    """The :class:`~dprec.evaluation.runner.Experiment` of ``task`` on ``ds`` over seeds
    0..``seeds``-1: leave-one-out ranking (``split`` latest, the default, or random, with
    ``negatives`` sampled per user), k-fold (``folds``, default 5) or user-split rating, or
    the PrivRec protocol."""
    if task == "strong":
        return Experiment(ds, range(seeds), strong_split(split), UserRankingEvaluator(
            ks=(10, 20, 50, 100), list_ks=STRONG_LIST_KS,
            threshold=STRONG_THRESHOLD if ds.rating_scale is not None else 0.0))
    if task == "privrec":
        if split not in (None, "user"):
            raise DprecError(f"the PrivRec protocol uses the user split, got --split {split}")
        return Experiment(ds, range(seeds), UserSplit(0.2), UserRankingEvaluator())
    if task == "ranking":
        rule = split or "latest"
        if rule not in ("latest", "random"):
            raise DprecError(f"--split for a ranking system must be latest or random, got {rule}")
        return Experiment(ds, range(seeds), LeaveOneOutSplit(rule),  # type: ignore[arg-type]
                          RankingEvaluator(negatives))
    kind = split or "kfold"
    if kind == "kfold":
        return Experiment(ds, range(seeds), KFoldSplit(folds or 5), RatingEvaluator())
    if kind == "user":
        return Experiment(ds, range(seeds), UserSplit(), RatingEvaluator())
    raise DprecError(f"--split for a rating system must be kfold or user, got {kind}")


def strong_split(split: str | None) -> StrongGeneralisationSplit:
    """``strong`` (20% of the users held out) or ``strong:N`` (N held-out users, e.g.
    ``strong:10000`` as Liang et al. on ML-20M) to its split; 20% of each held-out user's
    data is the test set."""
    text = split or "strong"
    head, colon, count = text.partition(":")
    if head != "strong" or (colon and not (count.isdigit() and int(count) >= 1)):
        raise DprecError(f"--split {text!r}: use strong (20% of users held out) or strong:N "
                         "(N >= 1 held-out users)")
    return StrongGeneralisationSplit(held_out=int(count) if count else 0.2)
