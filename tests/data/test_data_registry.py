"""load_dataset: names, data dirs, errors."""

from __future__ import annotations

import numpy as np
import pytest

from dprec.data import registry
from dprec.data.registry import KNOWN_DATASETS, load_dataset
from dprec.errors import DataError

pytestmark = pytest.mark.usefixtures("no_releases")


def write_ml1m(folder):
    folder.mkdir(parents=True)
    (folder / "ratings.dat").write_text("1::10::4::978300760\n1::3::2::978300761\n"
                                        "2::3::5::978300762\n")
    (folder / "users.dat").write_text("1::F::1::10::48067\n2::M::56::16::70072\n")
    (folder / "movies.dat").write_text("3::A (1995)::Comedy\n10::B (1996)::Drama|War\n")
    return folder


def test_known_names():
    for name in ("ml-100k", "ml-1m", "ml-10m", "ml-20m", "ml-25m"):
        assert name in KNOWN_DATASETS
    with pytest.raises(DataError, match=r"unknown dataset 'ml-2m'; known: ml-100k, ml-1m"):
        load_dataset("ml-2m")


@pytest.mark.parametrize("name", ["ml-1m", "ml-10m", "ml-20m", "ml-25m"])
def test_large_movielens_needs_a_fetch_or_a_data_dir(name, monkeypatch, tmp_path):
    monkeypatch.delenv("DPREC_DATA", raising=False)
    monkeypatch.setenv("DPREC_CACHE", str(tmp_path))
    folder = {"ml-10m": "ml-10M100K"}.get(name, name)
    with pytest.raises(DataError, match=f"{name.upper()}: not in the cache .*: run `dprec "
                                        f"data fetch {name}` to download and verify it, or "
                                        f"pass --data-dir PATH pointing at the extracted "
                                        f"{folder}"):
        load_dataset(name)


def test_ml1m_from_data_dir_and_env(tmp_path, monkeypatch):
    monkeypatch.setenv("DPREC_CACHE", str(tmp_path / "cache"))
    write_ml1m(tmp_path / "ml-1m")
    ds = load_dataset("ml-1m", data_dir=tmp_path)
    assert (ds.name, ds.n_users, ds.n_items, ds.n_interactions) == ("ml-1m", 2, 2, 3)
    assert ds.history == (f"source: data-dir {(tmp_path / 'ml-1m').resolve()}",)
    monkeypatch.setenv("DPREC_DATA", str(tmp_path / "ml-1m"))
    assert load_dataset("ML-1M").n_interactions == 3
    with pytest.raises(DataError, match=r"ML-1M: no ratings.dat in .*ml-1m, and not in the "
                                        r"cache"):
        load_dataset("ml-1m", data_dir=tmp_path / "elsewhere")


def test_ml20m_from_data_dir(tmp_path):
    folder = tmp_path / "ml-20m"
    folder.mkdir()
    (folder / "ratings.csv").write_text("userId,movieId,rating,timestamp\n1,2,3.5,1112486027\n")
    ds = load_dataset("ml-20m", data_dir=tmp_path)
    assert ds.name == "ml-20m" and ds.matrix.data.tolist() == [3.5]


def test_ml100k_goes_through_fetch(monkeypatch, tmp_path):
    seen = []
    monkeypatch.setattr(registry, "fetch_and_load_ml100k",
                        lambda data_dir=None: seen.append(data_dir) or "fetched")
    assert load_dataset("ml-100k", data_dir=tmp_path) == "fetched"
    assert seen == [tmp_path]


def test_csv(tmp_path):
    p = tmp_path / "apps.csv"
    p.write_text("user,app\nu1,a\nu1,b\nu2,a\n")
    ds = load_dataset(f"csv:{p}")
    assert ds.name == f"csv#{ds.content_sha256()[:16]}" and ds.n_interactions == 3
    assert ds.history == (f"source: file {p.resolve()}",)
    with pytest.raises(DataError, match="csv: needs a path"):
        load_dataset("csv:")


def test_synthetic_names():
    ds = load_dataset("synthetic-200x100")
    assert ds.name == "synthetic-200x100"
    assert (ds.n_users, ds.n_items, ds.n_interactions) == (200, 100, round(0.063 * 200 * 100))
    big = load_dataset("synthetic-200x100-3000", seed=1)
    assert big.n_interactions == 3000
    assert np.diff(big.matrix.indptr).min() >= 3000 // 200 // 2  # min = half the mean
    same = load_dataset("synthetic-200x100-3000", seed=1)
    other = load_dataset("synthetic-200x100-3000", seed=2)
    assert (same.matrix != big.matrix).nnz == 0
    assert (other.matrix != big.matrix).nnz > 0
    with pytest.raises(DataError, match="n_interactions must be between"):
        load_dataset("synthetic-200x100-50000")
