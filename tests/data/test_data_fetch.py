"""fetch_ml100k: search order, downloads (monkeypatched), verification."""

from __future__ import annotations

import io
import logging
import zipfile
from pathlib import Path

import numpy as np
import pytest

from dprec.data import fetch
from dprec.errors import DataError

N_USERS, N_ITEMS, N_RATINGS = 943, 1682, 100_000


@pytest.fixture(scope="module")
def fake_ratings() -> np.ndarray:
    """100,000 distinct (user, item, rating, timestamp) rows covering 943 users, 1,682 items."""
    rng = np.random.default_rng(5)
    cover = np.arange(N_ITEMS) % N_USERS * N_ITEMS + np.arange(N_ITEMS)
    others = np.setdiff1d(rng.choice(N_USERS * N_ITEMS, 2 * N_RATINGS, replace=False), cover)
    cells = np.concatenate([cover, rng.permutation(others)[: N_RATINGS - len(cover)]])
    users, items = cells // N_ITEMS + 1, cells % N_ITEMS + 1
    return np.column_stack([users, items, rng.integers(1, 6, N_RATINGS),
                            rng.integers(874_724_710, 893_286_638, N_RATINGS)])


def _lines(rows: np.ndarray) -> str:
    return "".join(f"{u}\t{i}\t{r}\t{t}\n" for u, i, r, t in rows.tolist())


def grouplens_files(rows: np.ndarray) -> dict[str, str]:
    return {
        "u.data": _lines(rows),
        "u.user": "".join(f"{u}|30|M|other|00000\n" for u in range(1, N_USERS + 1)),
        "u.item": "".join(f"{i}|Movie {i} (1995)|01-Jan-1995||http://x|" + "|".join(
            "1" if g == i % 19 else "0" for g in range(19)) + "\n"
            for i in range(1, N_ITEMS + 1)),
    }


def atomic_files(rows: np.ndarray) -> dict[str, str]:
    return {
        "ml-100k.inter": "user_id:token\titem_id:token\trating:float\ttimestamp:float\n"
                         + _lines(rows),
        "ml-100k.user": "user_id:token\tage:token\tgender:token\toccupation:token\t"
                        "zip_code:token\n"
                        + "".join(f"{u}\t30\tF\tother\t00000\n" for u in range(1, N_USERS + 1)),
        "ml-100k.item": "item_id:token\tmovie_title:token_seq\trelease_year:token\t"
                        "class:token_seq\n"
                        + "".join(f"{i}\tMovie {i}\t1995\tDrama Comedy\n"
                                  for i in range(1, N_ITEMS + 1)),
    }


def write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


@pytest.fixture
def env(tmp_path, monkeypatch):
    """An empty cache, no DPREC_DATA, and downloads that fail the test if reached."""
    monkeypatch.setenv("DPREC_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("DPREC_DATA", raising=False)

    def unexpected(*args, **kwargs):
        raise AssertionError("no download expected")

    monkeypatch.setattr(fetch, "_download_grouplens", unexpected)
    monkeypatch.setattr(fetch, "_pip_download", unexpected)
    return tmp_path


def offline(*args, **kwargs):
    raise DataError("cannot resolve files.grouplens.org within 3 s (offline?)")


def test_cache_dir_env(monkeypatch, tmp_path):
    monkeypatch.setenv("DPREC_CACHE", str(tmp_path / "c"))
    assert fetch.cache_dir() == tmp_path / "c"
    monkeypatch.delenv("DPREC_CACHE")
    assert fetch.cache_dir() == Path.home() / ".cache" / "dprec"


def test_registry_wheel_download(env, fake_ratings, monkeypatch, caplog):
    """GroupLens unreachable -> pip wheel; only the three data files land in the cache."""
    calls = []

    def fake_pip(dest: Path) -> Path:
        calls.append(dest)
        wheel = dest / "recbole-1.2.1-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as z:
            for name, text in atomic_files(fake_ratings).items():
                z.writestr(f"recbole/dataset_example/ml-100k/{name}", text)
            z.writestr("recbole/dataset_example/ml-100k/ml-100k.kg", "not wanted")
            z.writestr("recbole/__init__.py", "")
        return wheel

    monkeypatch.setattr(fetch, "_download_grouplens", offline)
    monkeypatch.setattr(fetch, "_pip_download", fake_pip)
    with caplog.at_level(logging.INFO, logger="dprec.data.fetch"):
        path = fetch.fetch_ml100k()
    assert path == env / "cache" / "ml-100k"
    assert sorted(p.name for p in path.iterdir()) == [
        "ml-100k.inter", "ml-100k.item", "ml-100k.user"]
    assert len(calls) == 1 and not calls[0].exists()  # the temporary download is gone
    assert "GroupLens download failed" in caplog.text
    assert "downloaded from registry" in caplog.text
    # second call: served from the cache, no download
    monkeypatch.setattr(fetch, "_pip_download", offline)
    ds = fetch.fetch_and_load_ml100k()
    assert (ds.n_users, ds.n_items, ds.n_interactions) == (N_USERS, N_ITEMS, N_RATINGS)


def test_grouplens_zip_download(env, fake_ratings, monkeypatch):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, text in grouplens_files(fake_ratings).items():
            z.writestr(f"ml-100k/{name}", text)
        z.writestr("ml-100k/README", "readme")
    monkeypatch.setattr(fetch, "_download_grouplens", lambda *a, **k: buf.getvalue())
    path = fetch.fetch_ml100k()
    assert sorted(p.name for p in path.iterdir()) == ["u.data", "u.item", "u.user"]


def test_local_data_dir_and_env(env, fake_ratings, monkeypatch):
    local = write(env / "mydata" / "ml-100k", grouplens_files(fake_ratings))
    assert fetch.fetch_ml100k(env / "mydata") == local
    monkeypatch.setenv("DPREC_DATA", str(local))
    assert fetch.fetch_ml100k() == local
    assert not (env / "cache" / "ml-100k").exists()  # local copies are not duplicated


def test_cache_comes_first(env, fake_ratings):
    cached = write(env / "cache" / "ml-100k", atomic_files(fake_ratings))
    local = write(env / "local", grouplens_files(fake_ratings))
    assert fetch.fetch_ml100k(local) == cached


def test_nothing_found_without_download(env):
    with pytest.raises(DataError, match="--data-dir PATH"):
        fetch.fetch_ml100k(env / "empty", allow_download=False)


def test_all_sources_fail(env, monkeypatch):
    monkeypatch.setattr(fetch, "_download_grouplens", offline)
    monkeypatch.setattr(fetch, "_pip_download",
                        lambda dest: (_ for _ in ()).throw(DataError("pip download failed")))
    with pytest.raises(DataError, match=r"could not be obtained: GroupLens: .*registry: pip"):
        fetch.fetch_ml100k()


def test_truncated_local_copy(env, fake_ratings):
    local = write(env / "local", grouplens_files(fake_ratings[:-10]))
    with pytest.raises(DataError, match=r"truncated or corrupt: expected 943 users.*"
                                        r"99,990 ratings"):
        fetch.fetch_ml100k(local)


def test_corrupt_cache_says_delete_it(env, fake_ratings):
    files = atomic_files(fake_ratings)
    files["ml-100k.inter"] = files["ml-100k.inter"][:50_000] + "\n12\tgarbage\n"
    cached = write(env / "cache" / "ml-100k", files)
    with pytest.raises(DataError, match=r"cannot be loaded.*delete the cache folder") as e:
        fetch.fetch_ml100k()
    assert str(cached) in str(e.value)


def test_corrupt_download_is_removed(env, fake_ratings, monkeypatch):
    def fake_pip(dest: Path) -> Path:
        wheel = dest / "recbole-1.2.1-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as z:
            for name, text in atomic_files(fake_ratings[:5000]).items():
                z.writestr(f"recbole/dataset_example/ml-100k/{name}", text)
        return wheel

    monkeypatch.setattr(fetch, "_download_grouplens", offline)
    monkeypatch.setattr(fetch, "_pip_download", fake_pip)
    with pytest.raises(DataError, match="truncated or corrupt"):
        fetch.fetch_ml100k()
    assert not (env / "cache" / "ml-100k").exists()


def test_wheel_without_data_files(env, monkeypatch):
    def fake_pip(dest: Path) -> Path:
        wheel = dest / "recbole-1.2.1-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as z:
            z.writestr("recbole/__init__.py", "")
        return wheel

    monkeypatch.setattr(fetch, "_download_grouplens", offline)
    monkeypatch.setattr(fetch, "_pip_download", fake_pip)
    with pytest.raises(DataError, match=r"registry: recbole-1\.2\.1-py3-none-any\.whl lacks"):
        fetch.fetch_ml100k()


@pytest.mark.slow
def test_real_fetch(tmp_path, monkeypatch):
    """The real thing: GroupLens or the recbole wheel from the registry."""
    monkeypatch.setenv("DPREC_CACHE", str(tmp_path))
    monkeypatch.delenv("DPREC_DATA", raising=False)
    try:
        ds = fetch.fetch_and_load_ml100k()
    except DataError as e:
        if "could not be obtained" in str(e):
            pytest.skip(f"no network or registry: {e}")
        raise
    assert (ds.n_users, ds.n_items, ds.n_interactions) == (943, 1682, 100_000)
    assert ds.timestamps is not None and ds.timestamps.min() > 8e8
    assert set(np.unique(ds.matrix.data)) == {1.0, 2.0, 3.0, 4.0, 5.0}
    assert ds.user_features.shape == (943, 4)
    assert ds.item_features["genres"].str.contains("Drama").sum() > 500
