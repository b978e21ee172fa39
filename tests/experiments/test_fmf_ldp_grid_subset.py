"""experiments/fmf_ldp_grid.py's real-data cells: top users x top items by activity, with
dprec.selection.top_k's tie rule (larger count, then the smaller index)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

from dprec.data.dataset import Dataset

ROOT = Path(__file__).resolve().parents[2]


def _load_grid():
    spec = importlib.util.spec_from_file_location("fmf_ldp_grid_script",
                                                  ROOT / "experiments" / "fmf_ldp_grid.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


grid = _load_grid()


def _toy() -> Dataset:
    # item counts: 0 -> 4, 1 -> 3, 2 -> 3, 3 -> 1 (items 1 and 2 tie)
    # counts on items {0, 1}: user 0 -> 2, user 1 -> 2, user 2 -> 1, user 3 -> 2 (tie of 3)
    pairs = [(0, 0), (0, 1), (0, 3), (1, 0), (1, 1), (1, 2), (2, 0), (2, 2),
             (3, 0), (3, 1), (3, 2)]
    users, items = (np.array(c) for c in zip(*pairs, strict=True))
    return Dataset.from_triples("toy", users, items, ratings=np.arange(1, 12, dtype=float),
                                timestamps=np.arange(100, 111))


def test_top_items_then_top_users_with_the_smaller_index_on_ties() -> None:
    sub = grid.activity_subset(_toy(), users=2, items=2)
    assert sub.item_ids.tolist() == [0, 1]  # item 1 beats item 2 (tie, smaller index)
    assert sub.user_ids.tolist() == [0, 1]  # users 0, 1, 3 tie at 2: the two smallest
    assert sub.matrix.toarray().tolist() == [[1.0, 2.0], [4.0, 5.0]]
    # timestamps follow their ratings
    assert sub.timestamps.tolist() == [100, 101, 103, 104]
    assert sub.history[-1].startswith("activity_subset(users=2,items=2")


def test_users_need_two_interactions_and_enough_unseen_items() -> None:
    sub = grid.activity_subset(_toy(), users=4, items=2)
    assert sub.user_ids.tolist() == [0, 1, 3]  # user 2 has 1 interaction on items {0, 1}
    none_left = grid.activity_subset(_toy(), users=4, items=3, min_unseen=1)
    assert none_left.user_ids.tolist() == [0, 2]  # users 1 and 3 saw all of {0, 1, 2}


def test_whole_data_set_is_unchanged() -> None:
    ds = _toy()
    sub = grid.activity_subset(ds, users=4, items=4, min_per_user=0)
    assert (sub.matrix != ds.matrix).nnz == 0
    assert np.array_equal(sub.timestamps, ds.timestamps)
