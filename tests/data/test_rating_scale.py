"""Every data set declares its public rating scale, or has none: it is never read off the data
(issue 20: ldp-svd normalised csv: ratings on their own min and max, unaccounted)."""

import numpy as np
import pytest
from test_data_loaders import RATINGS, write_grouplens, write_ml1m

from dprec.data.dataset import Dataset
from dprec.data.filters import binarise, min_interactions
from dprec.data.loaders import load_ml1m, load_ml10m, load_ml100k, load_movielens_csv
from dprec.data.registry import load_dataset
from dprec.data.synthetic import synthetic
from dprec.errors import DataError, DprecError
from dprec.evaluation.rating import RatingEvaluator
from dprec.evaluation.runner import Experiment
from dprec.evaluation.split import KFoldSplit
from dprec.evaluation.tuning import training_part
from dprec.systems.registry import make_system

pytestmark = pytest.mark.usefixtures("no_releases")


def test_movielens_releases_declare_their_scale(tmp_path):
    assert load_ml100k(write_grouplens(tmp_path / "ml-100k")).rating_scale == (1.0, 5.0)
    write_ml1m(tmp_path / "ml-1m")
    assert load_ml1m(tmp_path / "ml-1m").rating_scale == (1.0, 5.0)
    folder = tmp_path / "ml-10M100K"
    folder.mkdir()
    (folder / "ratings.dat").write_text("1::122::5::838985046\n2::122::4::868245777\n")
    ds = load_ml10m(folder)
    assert ds.rating_scale == (0.5, 5.0)  # half stars, though these ratings are all >= 4
    assert ds.summary()["rating_scale"] == "0.5..5"
    folder = tmp_path / "ml-25m"
    folder.mkdir()
    (folder / "ratings.csv").write_text(
        "userId,movieId,rating,timestamp\n"
        + "".join(f"{u},{i},{r},{t}\n" for u, i, r, t in RATINGS))
    assert load_movielens_csv(folder).rating_scale == (0.5, 5.0)
    assert synthetic(50, 80, 1_200, rng=0).rating_scale == (1.0, 5.0)


def test_csv_declares_no_scale_unless_told(tmp_path):
    p = tmp_path / "r.csv"
    p.write_text("user,item,rating\n1,1,3\n1,2,4\n2,1,7\n")
    assert load_dataset(f"csv:{p}").rating_scale is None
    ds = load_dataset(f"csv:{p}?rating_min=0&rating_max=10")
    assert ds.rating_scale == (0.0, 10.0)
    assert load_dataset(f"csv:{p}").name == ds.name  # the same data, the same streams
    with pytest.raises(DataError, match="give rating_min and rating_max together"):
        load_dataset(f"csv:{p}?rating_min=1")
    with pytest.raises(DataError, match="rating_max='ten' must be a number"):
        load_dataset(f"csv:{p}?rating_min=1&rating_max=ten")
    with pytest.raises(DataError, match=r"1 ratings lie outside the declared scale \[1, 5\]"):
        load_dataset(f"csv:{p}?rating_min=1&rating_max=5")
    with pytest.raises(DataError, match="low < high"):
        load_dataset(f"csv:{p}?rating_min=5&rating_max=1")
    with pytest.raises(DataError, match=r"implicit feedback \(threshold is given\): drop them"):
        load_dataset(f"csv:{p}?threshold=3&rating_min=1&rating_max=10")


def test_filters_and_validation_parts_keep_it_binarising_drops_it():
    ds = synthetic(80, 100, 2_500, rng=1)
    assert min_interactions(ds, min_user=5).rating_scale == (1.0, 5.0)
    assert binarise(ds, 3).rating_scale is None
    fold = KFoldSplit(2).folds(ds, np.random.default_rng(0))[0]
    assert training_part(ds, fold).rating_scale == (1.0, 5.0)
    with pytest.raises(DataError, match="outside the declared scale"):
        Dataset.from_triples("x", np.array([1]), np.array([1]), np.array([6.0]),
                             rating_scale=(1.0, 5.0))


@pytest.mark.slow  # two ldp-svd runs through the CLI
def test_ldp_svd_on_csv_needs_a_declared_scale(tmp_path):
    """On a csv: file rated 1..10 whose training ratings span less, the clamp range is the
    declared scale; with none declared, the run stops and says what to pass."""
    rng = np.random.default_rng(0)
    users, items = rng.integers(0, 60, 1_500), rng.integers(0, 40, 1_500)
    stars = rng.integers(3, 8, 1_500)  # the file's ratings span 3..7 of the 1..10 scale
    p = tmp_path / "r.csv"
    p.write_text("user,item,rating\n" + "".join(
        f"{u},{i},{r}\n" for u, i, r in zip(users, items, stars, strict=True)))
    small = {"epochs": 1, "factors": 2}
    with pytest.raises(DprecError, match="rating_min=1 --param rating_max=5"):
        Experiment(load_dataset(f"csv:{p}"), [0], KFoldSplit(2), RatingEvaluator()).run(
            lambda: make_system("ldp-svd", small))
    res = Experiment(load_dataset(f"csv:{p}?rating_min=1&rating_max=10"), [0], KFoldSplit(2),
                     RatingEvaluator()).run(lambda: make_system("ldp-svd", small))
    assert {tuple(d["rating_scale"]) for d in res.diagnostics} == {(1.0, 10.0)}
