"""fetch_ml100k: search order, downloads (monkeypatched), verification."""

from __future__ import annotations

import functools
import hashlib
import io
import json
import logging
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from dprec.data import fetch
from dprec.data.dataset import Dataset
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
    return _lines_of(np.ascontiguousarray(rows, np.int64).tobytes())


@functools.lru_cache(maxsize=8)
def _lines_of(data: bytes) -> str:
    rows = np.frombuffer(data, np.int64).reshape(-1, 4)
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


@pytest.fixture(scope="module")
def fake_checksums(fake_ratings) -> tuple[dict[str, str], str]:
    """The fake rows' file and content checksums."""
    files = {name: hashlib.sha256(text.encode()).hexdigest()
             for name, text in atomic_files(fake_ratings).items()}
    u, i, r, t = fake_ratings.T
    return files, Dataset.from_triples("x", u, i, r, t).content_sha256()


@pytest.fixture
def env(tmp_path, monkeypatch, fake_checksums):
    """An empty cache, no DPREC_DATA, downloads that fail the test if reached, and the fake
    rows standing in for the published release (its checksums)."""
    monkeypatch.setattr(fetch, "ML100K_ATOMIC_SHA256", fake_checksums[0])
    monkeypatch.setattr(fetch, "ML100K_RATINGS_SHA256", fake_checksums[1])
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
        "manifest.json", "ml-100k.inter", "ml-100k.item", "ml-100k.user"]
    assert len(calls) == 1 and not calls[0].exists()  # the temporary download is gone
    assert "GroupLens download failed" in caplog.text
    assert "downloaded from registry" in caplog.text
    # second call: served from the cache, no download
    monkeypatch.setattr(fetch, "_pip_download", offline)
    ds = fetch.fetch_and_load_ml100k()
    assert (ds.n_users, ds.n_items, ds.n_interactions) == (N_USERS, N_ITEMS, N_RATINGS)
    assert ds.history == (f"source: cache {path.resolve()}",)


def test_grouplens_zip_download(env, fake_ratings, monkeypatch):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, text in grouplens_files(fake_ratings).items():
            z.writestr(f"ml-100k/{name}", text)
        z.writestr("ml-100k/README", "readme")
    monkeypatch.setattr(fetch, "_download_grouplens", lambda *a, **k: buf.getvalue())
    ds = fetch.fetch_and_load_ml100k()
    path = env / "cache" / "ml-100k"
    assert sorted(p.name for p in path.iterdir()) == ["manifest.json", "u.data", "u.item",
                                                      "u.user"]
    assert ds.history == (f"source: download from GroupLens into {path.resolve()}",)
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["sha256"]["u.data"] == hashlib.sha256((path / "u.data").read_bytes()
                                                          ).hexdigest()


def test_local_data_dir_and_env(env, fake_ratings, monkeypatch):
    local = write(env / "mydata" / "ml-100k", grouplens_files(fake_ratings))
    assert fetch.fetch_ml100k(env / "mydata") == local
    monkeypatch.setenv("DPREC_DATA", str(local))
    assert fetch.fetch_ml100k() == local
    assert not (env / "cache" / "ml-100k").exists()  # local copies are not duplicated


def test_data_dir_beats_the_cache_and_the_source_is_recorded(env, fake_ratings, monkeypatch):
    """Explicit beats implicit: a data dir holding ML-100K wins over an existing cache."""
    cached = write(env / "cache" / "ml-100k", atomic_files(fake_ratings))
    local = write(env / "local", grouplens_files(fake_ratings))
    ds = fetch.fetch_and_load_ml100k(local)
    assert ds.history == (f"source: data-dir {local.resolve()}",)
    monkeypatch.setenv("DPREC_DATA", str(local))  # the environment variable is the same
    assert fetch.fetch_and_load_ml100k().history == ds.history
    monkeypatch.delenv("DPREC_DATA")
    ds = fetch.fetch_and_load_ml100k()
    assert ds.history == (f"source: cache {cached.resolve()}",)


def test_data_dir_without_ml100k_falls_back_to_the_cache(env, fake_ratings, caplog):
    cached = write(env / "cache" / "ml-100k", atomic_files(fake_ratings))
    (env / "other").mkdir()
    with caplog.at_level(logging.WARNING, logger="dprec.data.fetch"):
        ds = fetch.fetch_and_load_ml100k(env / "other")
    assert ds.history == (f"source: cache {cached.resolve()}",)
    assert "looking in the cache" in caplog.text


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
    with pytest.raises(DataError, match=r"has 100,000 ratings, found 99,990: the file looks "
                                        r"truncated or corrupt"):
        fetch.fetch_ml100k(local)


def test_corrupt_cache_says_delete_it(env, fake_ratings):
    files = atomic_files(fake_ratings)
    files["ml-100k.inter"] = files["ml-100k.inter"][:50_000] + "\n12\tgarbage\n"
    cached = write(env / "cache" / "ml-100k", files)
    with pytest.raises(DataError, match=r"the cache is corrupt: delete the folder") as e:
        fetch.fetch_ml100k()
    assert str(cached) in str(e.value) and "dprec data fetch ml-100k" in str(e.value)


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


# --------------------------------------------------------------------------- cache integrity


def _fake_pip(rows: np.ndarray):
    def fake_pip(dest: Path) -> Path:
        wheel = dest / "recbole-1.2.1-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as z:
            for name, text in atomic_files(rows).items():
                z.writestr(f"recbole/dataset_example/ml-100k/{name}", text)
        return wheel
    return fake_pip


def _shuffled_timestamps(rows: np.ndarray) -> np.ndarray:
    """The tester's edit: same shape, same ids and ratings, timestamps permuted."""
    out = rows.copy()
    out[:, 3] = np.random.default_rng(1).permutation(out[:, 3])
    return out


def _one_rating_changed(rows: np.ndarray) -> np.ndarray:
    out = rows.copy()
    out[7, 2] = out[7, 2] % 5 + 1
    return out


def _rewrite_inter(rows_edit):
    return lambda folder, rows: (folder / "ml-100k.inter").write_text(
        atomic_files(rows_edit(rows))["ml-100k.inter"])


def _edit_json(change):
    def edit(folder: Path, rows: np.ndarray) -> None:
        path = folder / "manifest.json"
        path.write_text(change(path.read_text()))
    return edit


# edit of a fetched cache -> fragment of the error
CACHE_EDITS = {
    "timestamps shuffled": (_rewrite_inter(_shuffled_timestamps),
                            r"ml-100k\.inter changed since it was fetched"),
    "one rating changed": (_rewrite_inter(_one_rating_changed), r"ml-100k\.inter changed"),
    "a user's side features edited": (
        lambda folder, rows: (folder / "ml-100k.user").write_text(
            (folder / "ml-100k.user").read_text().replace("\t30\t", "\t31\t", 1)),
        r"ml-100k\.user changed"),
    "a file dropped from the manifest": (
        _edit_json(lambda t: json.dumps({"sha256": {
            k: v for k, v in json.loads(t)["sha256"].items() if k != "ml-100k.inter"}})),
        r"manifest\.json does not list ml-100k\.inter"),
    "manifest unreadable": (_edit_json(lambda t: t[:20]), r"manifest\.json is unreadable"),
    "manifest removed, content edited": (
        lambda folder, rows: ((folder / "manifest.json").unlink(),
                              _rewrite_inter(_shuffled_timestamps)(folder, rows)),
        r"ml-100k\.inter differ from the release"),
}


@pytest.mark.parametrize("edit, fragment", CACHE_EDITS.values(), ids=CACHE_EDITS.keys())
def test_an_edited_cache_is_refused(edit, fragment, env, fake_ratings, monkeypatch):
    """Before: an edit that kept the shape loaded silently (shuffled timestamps moved
    popularity HR@10 from 0.31 to 0.56)."""
    monkeypatch.setattr(fetch, "_download_grouplens", offline)
    monkeypatch.setattr(fetch, "_pip_download", _fake_pip(fake_ratings))
    folder = fetch.fetch_ml100k()
    edit(folder, fake_ratings)
    with pytest.raises(DataError, match=fragment) as e:
        fetch.fetch_ml100k()
    assert "the cache is corrupt: delete the folder" in str(e.value)
    assert str(folder) in str(e.value) and "dprec data fetch ml-100k" in str(e.value)


@pytest.mark.parametrize("layout", [atomic_files, grouplens_files])
def test_a_cache_without_manifest_is_checked_against_the_release(layout, env, fake_ratings):
    """An older cache has no manifest: accepted if it is the release (the manifest is written
    then), refused if it is not."""
    folder = write(env / "cache" / "ml-100k", layout(fake_ratings))
    fetch.fetch_ml100k()
    manifest = json.loads((folder / "manifest.json").read_text())["sha256"]
    assert manifest == {f: hashlib.sha256((folder / f).read_bytes()).hexdigest()
                        for f in manifest}
    assert len(manifest) == 3
    (folder / "manifest.json").unlink()
    write(folder, layout(_shuffled_timestamps(fake_ratings)))
    with pytest.raises(DataError, match=r"differ from the release.*the cache is corrupt"):
        fetch.fetch_ml100k()
    assert not (folder / "manifest.json").exists()


def test_a_download_that_is_not_the_release_is_not_kept(env, fake_ratings, monkeypatch):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, text in grouplens_files(_shuffled_timestamps(fake_ratings)).items():
            z.writestr(f"ml-100k/{name}", text)
    monkeypatch.setattr(fetch, "_download_grouplens", lambda *a, **k: buf.getvalue())
    monkeypatch.setattr(fetch, "_pip_download", _fake_pip(fake_ratings))
    ds = fetch.fetch_and_load_ml100k()  # the next source is tried
    assert ds.history[0].startswith("source: download from registry")
    shutil.rmtree(env / "cache" / "ml-100k")
    monkeypatch.setattr(fetch, "_pip_download", _fake_pip(_one_rating_changed(fake_ratings)))
    with pytest.raises(DataError, match=r"GroupLens: the GroupLens download is not the "
                                        r"published MovieLens-100K: the ratings in u\.data "
                                        r"differ.*registry: .*ml-100k\.inter differ"):
        fetch.fetch_ml100k()
    assert not (env / "cache" / "ml-100k").exists()


def test_an_edited_data_dir_copy_loads_with_a_warning_in_the_history(env, fake_ratings,
                                                                       caplog):
    """The user's own folder is their choice: loaded, but the results say it is not the
    release."""
    local = write(env / "local", grouplens_files(_shuffled_timestamps(fake_ratings)))
    with caplog.at_level(logging.WARNING, logger="dprec.data.fetch"):
        ds = fetch.fetch_and_load_ml100k(local)
    assert ds.history[0] == f"source: data-dir {local.resolve()}"
    assert ds.history[1].startswith("content: not the published release (the ratings")
    assert "is not the published release" in caplog.text


def test_the_real_cache_matches_the_known_checksums(tmp_path, monkeypatch):
    """The cached ML-100K of this machine (from a verified fetch), copied without its
    manifest, passes the hardcoded release checksums; nothing is downloaded."""
    real = Path.home() / ".cache" / "dprec" / "ml-100k"
    if fetch.ml100k_layout(real) != "atomic":
        pytest.skip("no RecBole-layout ML-100K in ~/.cache/dprec")
    folder = tmp_path / "ml-100k"
    folder.mkdir()
    for f in fetch.ATOMIC_FILES:
        (folder / f).write_bytes((real / f).read_bytes())
    monkeypatch.setenv("DPREC_CACHE", str(tmp_path))
    monkeypatch.delenv("DPREC_DATA", raising=False)
    ds = fetch.fetch_and_load_ml100k(allow_download=False)
    assert ds.content_sha256() == fetch.ML100K_RATINGS_SHA256
    assert (folder / "manifest.json").exists()
