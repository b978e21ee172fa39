"""Side features encoded from the dataset layer, on the loaders' tiny fixtures."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

# the fixture writers of the loader tests (tests/data is on sys.path, pytest's prepend mode)
from test_data_loaders import write_atomic, write_grouplens, write_ml1m

from dprec.data.dataset import Dataset
from dprec.data.features import FeatureBlock, SideFeatures, infer_fields, side_features
from dprec.data.filters import min_interactions
from dprec.data.loaders import load_csv, load_ml1m, load_ml10m, load_ml100k
from dprec.errors import DataError, DprecError

pytestmark = pytest.mark.usefixtures("no_releases")

# write_grouplens: users 1 (24, M, technician), 2 (53, F, other), 7 (57, M, administrator);
# items 3 (Comedy), 5 (unknown), 10 (Action|Adventure|Thriller)
ML100K_GENRES = ("genre=Action", "genre=Adventure", "genre=Comedy", "genre=Thriller",
                 "genre=unknown")
ML100K_HOT = np.array([[0, 0, 1, 0, 0],   # item 3
                       [0, 0, 0, 0, 1],   # item 5
                       [1, 1, 0, 1, 0]],  # item 10
                      np.float32)


@pytest.fixture
def ml100k(tmp_path):
    return load_ml100k(write_grouplens(tmp_path / "ml-100k"))


def test_ml100k_defaults(ml100k):
    sf = side_features(ml100k)
    u, it = sf.users, sf.items
    assert (u.n, it.n) == (ml100k.n_users, ml100k.n_items) == (3, 3)
    assert list(ml100k.user_ids) == [1, 2, 7]
    assert u.categorical_names == ("gender", "occupation")
    assert u.cardinalities == (3, 4)  # F, M + missing; administrator, other, technician + 0
    assert u.categorical.dtype == np.int64
    # sorted values -> 1..k: F=1, M=2; administrator=1, other=2, technician=3
    np.testing.assert_array_equal(u.categorical, [[2, 3], [1, 2], [2, 1]])
    assert u.numeric_names == ("age",)
    assert u.numeric.dtype == np.float32
    np.testing.assert_allclose(u.numeric[:, 0], [0.0, 29 / 33, 1.0], rtol=1e-6)
    assert u.multi_hot.shape == (3, 0) and u.multi_hot_names == ()
    assert it.categorical.shape == (3, 0) and it.numeric.shape == (3, 0)
    assert it.multi_hot_names == ML100K_GENRES
    assert it.multi_hot.dtype == np.float32
    np.testing.assert_array_equal(it.multi_hot, ML100K_HOT)


def test_genres_match_the_fixture_strings(ml100k):
    """Every multi-hot row is exactly the item's ``genres`` string."""
    it = side_features(ml100k).items
    names = np.array([n.removeprefix("genre=") for n in it.multi_hot_names])
    for row, genres in zip(it.multi_hot, ml100k.item_features["genres"], strict=True):
        assert set(names[row == 1]) == set(genres.split("|"))


def test_atomic_layout_gives_the_same_features(tmp_path, ml100k):
    atomic = load_ml100k(write_atomic(tmp_path / "atomic"))
    assert side_features(atomic) == side_features(ml100k)


def test_deterministic_under_row_permutation(tmp_path, ml100k):
    folder = write_grouplens(tmp_path / "perm")
    for name in ("u.data", "u.user", "u.item"):
        lines = (folder / name).read_bytes().splitlines(keepends=True)
        (folder / name).write_bytes(b"".join(lines[::-1]))
    permuted = load_ml100k(folder)
    assert side_features(permuted) == side_features(ml100k)
    # also when the internal order itself changes: relabel the users so that their order
    # reverses; each user keeps its codes
    d = ml100k
    users, items, ratings = d.triples()
    relabel = np.array([30, 20, 10])  # raw ids 1, 2, 7 -> 30, 20, 10
    uf = d.user_features.set_axis(relabel).rename_axis("user_id")
    flipped = Dataset.from_triples("ml-100k", relabel[users], d.item_ids[items], ratings,
                                   user_features=uf, item_features=d.item_features)
    a, b = side_features(d).users, side_features(flipped).users
    assert b == a.take(np.array([2, 1, 0]))


def test_take(ml100k):
    u = side_features(ml100k).users
    sub = u.take(np.array([2, 0]))
    assert sub.n == 2
    assert sub.cardinalities == u.cardinalities and sub.categorical_names == u.categorical_names
    np.testing.assert_array_equal(sub.categorical, u.categorical[[2, 0]])
    np.testing.assert_array_equal(sub.numeric, u.numeric[[2, 0]])
    assert u.take(np.array([True, False, True])) == u.take(np.array([0, 2]))
    assert u.take(np.array([], np.int64)).n == 0
    with pytest.raises(DprecError, match=r"take: index values must lie in 0\.\.2, got 0\.\.3"):
        u.take(np.array([0, 3]))
    with pytest.raises(DprecError, match=r"boolean mask must have shape \(3,\)"):
        u.take(np.array([True, False]))
    with pytest.raises(DprecError, match="must hold integers or booleans, got float64"):
        u.take(np.array([0.0, 1.0]))


def test_after_a_filter_the_blocks_align(ml100k):
    full = side_features(ml100k)
    kept = min_interactions(ml100k, min_user=2, min_item=2)
    assert list(kept.user_ids) == [1, 7] and list(kept.item_ids) == [3, 10]
    sf = side_features(kept)
    assert (sf.users.n, sf.items.n) == (kept.n_users, kept.n_items) == (2, 2)
    # codes are computed over the users present: both are M; occupations technician (2),
    # administrator (1); ages 24 and 57 span [0, 1]
    assert sf.users.cardinalities == (2, 3)
    np.testing.assert_array_equal(sf.users.categorical, [[1, 2], [1, 1]])
    np.testing.assert_array_equal(sf.users.numeric[:, 0], [0.0, 1.0])
    assert sf.items.multi_hot_names == ("genre=Action", "genre=Adventure", "genre=Comedy",
                                        "genre=Thriller")
    np.testing.assert_array_equal(sf.items.multi_hot, [[0, 0, 1, 0], [1, 1, 0, 1]])
    # the full encoding's rows for the kept users/items are the same users/items
    ui = np.searchsorted(ml100k.user_ids, kept.user_ids)
    ii = np.searchsorted(ml100k.item_ids, kept.item_ids)
    np.testing.assert_array_equal(full.users.take(ui).numeric, full.users.numeric[[0, 2]])
    np.testing.assert_array_equal(full.items.take(ii).multi_hot, ML100K_HOT[[0, 2]])


def test_describe_is_serialisable(ml100k):
    d = side_features(ml100k).describe()
    assert d == {
        "users": {"n": 3, "categorical": {"gender": 3, "occupation": 4}, "numeric": ["age"],
                  "multi_hot": [], "width": 3 + 4 + 1},
        "items": {"n": 3, "categorical": {}, "numeric": [], "multi_hot": list(ML100K_GENRES),
                  "width": 5},
    }
    assert json.loads(json.dumps(d)) == d


def test_ml1m_age_is_categorical(tmp_path):
    ds = load_ml1m(write_ml1m(tmp_path / "ml-1m"))
    sf = side_features(ds)
    u = sf.users
    assert list(ds.user_ids) == [1, 2, 7]
    assert u.categorical_names == ("age", "gender", "occupation")
    # ages 1, 56, 25 -> 1, 3, 2; F, M, M; occupations 10, 16, 12 -> 1, 3, 2 (numeric order)
    np.testing.assert_array_equal(u.categorical, [[1, 1, 1], [3, 2, 3], [2, 2, 2]])
    assert u.cardinalities == (4, 3, 4)
    assert u.numeric.shape == (3, 0) and u.numeric_names == ()
    assert list(ds.item_ids) == [3, 5, 10]
    assert sf.items.multi_hot_names == ("genre=Action", "genre=Adventure", "genre=Animation",
                                        "genre=Children's", "genre=Comedy", "genre=Sci-Fi")
    np.testing.assert_array_equal(sf.items.multi_hot, [[1, 1, 0, 0, 0, 1], [0, 0, 0, 0, 1, 0],
                                                       [0, 0, 1, 1, 0, 0]])


def test_name_suffixes_and_inference(tmp_path):
    ds = load_ml1m(write_ml1m(tmp_path / "ml-1m"))
    base = side_features(ds)
    for name in ("ML-1M", "ml-1m/validation", "ml-1m-5core"):
        assert side_features(replace(ds, name=name)) == base
    # ml-10m is not ml-1m: its kinds are inferred (age has 3 values, so categorical; zip
    # codes and titles are skipped; year is numeric with few values, so categorical)
    other = side_features(replace(ds, name="ml-10m"))
    assert other.users == base.users
    assert other.items.categorical_names == ("year",)
    np.testing.assert_array_equal(other.items.multi_hot, base.items.multi_hot)


def test_infer_fields():
    n = 30
    frame = pd.DataFrame({
        "user_id": np.arange(n), "movieId": np.arange(n), "title": [f"t{i}" for i in range(n)],
        "zip_code": [f"{i:05d}" for i in range(n)], "income": np.arange(n) * 1.5,
        "stars": np.arange(n) % 5, "city": [f"c{i % 7}" for i in range(n)],
        "handle": [f"h{i}" for i in range(n)],
        "genres": ["A|B"] * n, "flag": np.arange(n) % 2 == 0,
    })
    assert infer_fields(frame) == {"income": "numeric", "stars": "categorical",
                                   "city": "categorical", "handle": "categorical",
                                   "genres": "multi_hot", "flag": "categorical"}
    many = pd.DataFrame({"tag": [f"x{i}" for i in range(1001)], "v": np.arange(1001)})
    assert infer_fields(many) == {"v": "numeric"}  # 1001 distinct texts: id-like, skipped


def test_explicit_fields_and_missing_values():
    uf = pd.DataFrame({"age": [30.0, np.nan, 50.0, 40.0], "city": ["b", None, "a", " "],
                       "tags": ["x|y", None, "", "(no genres listed)"]},
                      index=pd.Index([1, 2, 3, 4], name="user_id"))
    itf = pd.DataFrame({"kind": [2, 1]}, index=pd.Index([10, 11], name="item_id"))
    ds = Dataset.from_triples("custom", np.array([1, 2, 3, 4]), np.array([10, 11, 10, 11]),
                              user_features=uf, item_features=itf)
    sf = side_features(ds, {"tags": "multi_hot", "city": "categorical", "age": "numeric"},
                       {"kind": "categorical"})
    u = sf.users
    assert u.categorical_names == ("city",) and u.cardinalities == (3,)
    np.testing.assert_array_equal(u.categorical[:, 0], [2, 0, 1, 0])  # NaN, blank -> 0
    np.testing.assert_allclose(u.numeric[:, 0], [0.0, 0.0, 1.0, 0.5])  # NaN -> 0
    assert u.multi_hot_names == ("tags=x", "tags=y")
    np.testing.assert_array_equal(u.multi_hot, [[1, 1], [0, 0], [0, 0], [0, 0]])
    np.testing.assert_array_equal(sf.items.categorical[:, 0], [2, 1])
    # a constant numeric column scales to 0
    const = side_features(ds, {"age": "numeric"}, {"kind": "numeric"})
    np.testing.assert_array_equal(const.items.numeric[:, 0], [1.0, 0.0])
    same = Dataset.from_triples("custom", np.array([1]), np.array([10]),
                                user_features=uf.iloc[:1], item_features=itf.iloc[:1])
    np.testing.assert_array_equal(side_features(same, {"age": "numeric"}).users.numeric, [[0]])


def test_errors(tmp_path, ml100k):
    p = tmp_path / "r.csv"
    p.write_text("user,item\n1,2\n")
    with pytest.raises(DataError, match=r"has no user features; side features come with "
                                        r"ml-100k, ml-1m and frappe"):
        side_features(load_csv(p))
    folder = tmp_path / "ml-10M100K"
    folder.mkdir()
    (folder / "ratings.dat").write_text("1::122::5::838985046\n")
    (folder / "movies.dat").write_text("122::Boomerang (1992)::Comedy|Romance\n")
    with pytest.raises(DataError, match="'ml-10m' has no user features"):
        side_features(load_ml10m(folder))
    with pytest.raises(DataError, match=r"user_fields: 'ml-100k' has no column 'salary'; its "
                                        r"columns are \['age', 'gender', 'occupation', "
                                        r"'zip_code'\]"):
        side_features(ml100k, {"salary": "numeric"})
    with pytest.raises(DataError, match=r"item_fields\['genres'\]: kind must be one of "
                                        r"categorical, numeric, multi_hot, got 'ordinal'"):
        side_features(ml100k, item_fields={"genres": "ordinal"})
    with pytest.raises(DataError, match=r"user_fields: nothing to encode for 'ml-100k'; name "
                                        r"at least one of its columns"):
        side_features(ml100k, user_fields={})
    with pytest.raises(DataError, match=r"user_fields\['gender'\]: 'ml-100k' has non-numeric "
                                        r"values \(e\.g\. 'M'\); encode the column as "
                                        r"'categorical'"):
        side_features(ml100k, {"gender": "numeric"})
    only_zip = replace(ml100k, name="mine", user_features=ml100k.user_features[["zip_code"]])
    with pytest.raises(DataError, match=r"user_fields \(inferred\): nothing to encode"):
        side_features(only_zip)
    no_age = replace(ml100k, user_features=ml100k.user_features.drop(columns="age"))
    with pytest.raises(DataError, match=r"user_fields \(the defaults for 'ml-100k'\): "
                                        r"'ml-100k' has no column 'age'"):
        side_features(no_age)


def test_feature_block_checks_its_arrays():
    ok = {"categorical": np.zeros((2, 1), np.int64), "cardinalities": (1,),
          "categorical_names": ("a",), "numeric": np.zeros((2, 0), np.float32),
          "numeric_names": (), "multi_hot": np.zeros((2, 0), np.float32),
          "multi_hot_names": ()}
    block = FeatureBlock(**ok)
    assert block.n == 2 and block.width == 1
    assert SideFeatures(block, block).describe()["users"]["n"] == 2
    with pytest.raises(DprecError, match=r"numeric has shape \(3, 0\), expected \(2, 0\)"):
        FeatureBlock(**{**ok, "numeric": np.zeros((3, 0), np.float32)})
    with pytest.raises(DprecError, match="categorical must be a 2-d int64 array"):
        FeatureBlock(**{**ok, "categorical": np.zeros((2, 1), np.int32)})
    with pytest.raises(DprecError, match="codes must lie in 0..cardinality-1"):
        FeatureBlock(**{**ok, "categorical": np.ones((2, 1), np.int64)})
    with pytest.raises(DprecError, match="cardinalities has 2 entries for 1"):
        FeatureBlock(**{**ok, "cardinalities": (1, 2)})
