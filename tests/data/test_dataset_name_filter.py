"""The papers' user filter as a data set name: ``NAME:minN`` (e.g. ``ml-20m:min60``)."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from dprec.cli import app
from dprec.data.registry import KNOWN_DATASETS, load_dataset, split_filters
from dprec.errors import DataError

pytestmark = pytest.mark.usefixtures("no_releases")


def write_ml20m(root):
    """User u (1..8) rated items 1..u+1 (u + 1 ratings); item 9 is rated by user 8 only."""
    folder = root / "ml-20m"
    folder.mkdir()
    rows = [f"{u},{i},4.5,{1112486027 + u * 10 + i}" for u in range(1, 9) for i in range(1, u + 2)]
    (folder / "ratings.csv").write_text("userId,movieId,rating,timestamp\n" + "\n".join(rows)
                                        + "\n")
    return root


def test_split_filters():
    assert split_filters("ml-20m:min60") == ("ml-20m", (("min", 60),))
    assert split_filters(" ML-1M:MIN5 ") == ("ML-1M", (("min", 5),))
    assert split_filters("ml-20m") == ("ml-20m", ())
    assert split_filters("csv:data/r.csv?user=a:min3") == ("csv:data/r.csv?user=a",
                                                           (("min", 3),))
    assert split_filters("ml-20m:gt3.5:min5") == ("ml-20m", (("gt", 3.5), ("min", 5)))
    with pytest.raises(DataError, match=r":min0 needs N >= 1"):
        split_filters("ml-1m:min0")
    with pytest.raises(DataError, match=r":min2.5 needs N >= 1 .* whole number"):
        split_filters("ml-1m:min2.5")
    assert "<any of these>:min<N>" in KNOWN_DATASETS


def test_min_keeps_the_users_with_at_least_n_interactions(tmp_path):
    root = write_ml20m(tmp_path)
    full = load_dataset("ml-20m", data_dir=root)
    ds = load_dataset("ml-20m:min6", data_dir=root)
    counts = np.diff(ds.matrix.indptr)
    assert ds.name == "ml-20m:min6"
    assert ds.user_ids.tolist() == [5, 6, 7, 8] and counts.tolist() == [6, 7, 8, 9]
    assert ds.item_ids.tolist() == list(range(1, 10))
    assert ds.n_interactions == 6 + 7 + 8 + 9 < full.n_interactions
    assert ds.history[-1] == "min_interactions(user>=6,item>=1,one-pass)"
    assert ds.history[0].startswith("source: data-dir")
    assert ds.rating_scale == full.rating_scale


def test_items_nobody_kept_rated_are_dropped(tmp_path):
    ds = load_dataset("ml-20m:min9", data_dir=write_ml20m(tmp_path))
    assert ds.user_ids.tolist() == [8] and ds.item_ids.tolist() == list(range(1, 10))
    ds = load_dataset("synthetic-50x40:min15")
    assert (np.diff(ds.matrix.indptr) >= 15).all()
    assert (np.bincount(ds.matrix.indices, minlength=ds.n_items) >= 1).all()


def test_a_filter_that_keeps_nobody_is_an_error(tmp_path):
    with pytest.raises(DataError, match=r"ml-20m:min10: no user of ml-20m has 10 or more "
                                        r"interactions; lower N"):
        load_dataset("ml-20m:min10", data_dir=write_ml20m(tmp_path))


def test_the_filtered_data_set_is_named_apart_and_keeps_the_base_data():
    """The name (which seeds the random streams) differs; the interactions are the base's."""
    a = load_dataset("synthetic-60x40", seed=1)
    b = load_dataset("synthetic-60x40:min1", seed=1)
    assert b.name == "synthetic-60x40:min1" and a.name == "synthetic-60x40"
    rated = np.bincount(a.matrix.indices, minlength=a.n_items) > 0
    assert b.n_users == a.n_users and b.n_items == int(rated.sum())
    assert (a.matrix[:, np.flatnonzero(rated)] != b.matrix).nnz == 0


def write_graded(root):
    """User u (1..8) rated items 1..u+1; item i got rating 3.5 when i is odd, else 4.5, so
    user u has floor((u + 1) / 2) ratings > 3.5."""
    folder = root / "ml-20m"
    folder.mkdir()
    rows = [f"{u},{i},{3.5 if i % 2 else 4.5},{1112486027 + u * 10 + i}"
            for u in range(1, 9) for i in range(1, u + 2)]
    (folder / "ratings.csv").write_text("userId,movieId,rating,timestamp\n" + "\n".join(rows)
                                        + "\n")
    return root


def test_gt_then_min_is_liang_et_al_preprocessing(tmp_path):
    root = write_graded(tmp_path)
    ds = load_dataset("ml-20m:gt3.5:min3", data_dir=root)
    assert ds.name == "ml-20m:gt3.5:min3"
    # users 5..8 have 3, 3, 4, 4 ratings of 4.5 (items 2, 4, 6, 8); 3.5 is not > 3.5
    assert ds.user_ids.tolist() == [5, 6, 7, 8]
    assert np.diff(ds.matrix.indptr).tolist() == [3, 3, 4, 4]
    assert set(ds.item_ids.tolist()) == {2, 4, 6, 8} and (ds.matrix.data == 1).all()
    assert ds.rating_scale is None
    assert list(ds.history[-2:]) == ["binarise(rating>3.5)",
                                     "min_interactions(user>=3,item>=1,one-pass)"]
    with pytest.raises(DataError, match=r"no rating of ml-20m is > 5; lower T"):
        load_dataset("ml-20m:gt5", data_dir=root)
    with pytest.raises(DataError, match="implicit feedback .* drop the filter"):
        load_dataset("ml-20m:gt3.5:gt0.5", data_dir=root)


def test_the_cli_help_documents_the_filter():
    res = CliRunner().invoke(app, ["data", "--help"])
    text = " ".join(res.output.split())
    assert res.exit_code == 0
    assert "NAME:minN" in text and "ml-20m:min60" in text


def test_data_info_accepts_a_filtered_name(tmp_path):
    res = CliRunner().invoke(app, ["data", "info", "ml-20m:min6", "--data-dir",
                                   str(write_ml20m(tmp_path))])
    assert res.exit_code == 0, res.output
    assert "ml-20m:min6" in res.output
