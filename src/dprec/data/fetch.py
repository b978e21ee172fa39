"""MovieLens-100K that works offline: cache, local copy, GroupLens, then a registry wheel.

:func:`fetch_ml100k` looks, in order, in
1. the cache (``cache_dir()/ml-100k``);
2. ``data_dir`` or the ``DPREC_DATA`` environment variable (the folder itself or its
   ``ml-100k`` subfolder, in the GroupLens layout ``u.data/u.user/u.item`` or RecBole's
   atomic files ``ml-100k.inter/.user/.item``);
3. the GroupLens zip (3 s timeout), extracting ``u.data/u.user/u.item/u.genre``;
4. the wheel ``recbole==1.2.1`` from the package registry (``pip download --no-deps``),
   extracting only ``recbole/dataset_example/ml-100k/ml-100k.{inter,user,item}``.
Downloads land in the cache; MovieLens files are never part of the repository (their
licence forbids redistribution). Whatever is found is verified by loading it: 943 users,
1,682 items, 100,000 ratings.
"""

from __future__ import annotations

import io
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

from dprec.data.dataset import Dataset
from dprec.data.loaders import find_ml100k, load_ml100k
from dprec.errors import DataError

log = logging.getLogger(__name__)

ML100K_URL = "https://files.grouplens.org/datasets/movielens/ml-100k.zip"
RECBOLE_REQUIREMENT = "recbole==1.2.1"
ML100K_SHAPE = (943, 1682, 100_000)
GROUPLENS_TIMEOUT_S = 3.0
PIP_TIMEOUT_S = 300.0
_ZIP_MEMBERS = {f"ml-100k/{f}": f for f in ("u.data", "u.user", "u.item", "u.genre")}
_WHEEL_MEMBERS = {
    f"recbole/dataset_example/ml-100k/ml-100k.{ext}": f"ml-100k.{ext}"
    for ext in ("inter", "user", "item")
}


def cache_dir() -> Path:
    """dprec's cache folder: ``$DPREC_CACHE``, else ``~/.cache/dprec``."""
    env = os.environ.get("DPREC_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "dprec"


def ml100k_cache_path() -> Path:
    """Where a downloaded ML-100K is kept."""
    return cache_dir() / "ml-100k"


def _advice(path: Path, cached: bool) -> str:
    if cached:
        return (f"delete the cache folder {path} (e.g. `rm -r {path}`) and run again to "
                "re-download it, or pass --data-dir PATH pointing at an extracted ml-100k "
                "folder")
    return ("check that it is a complete, unmodified copy of MovieLens-100K, or pass "
            "--data-dir PATH pointing at another one")


def verify_ml100k(path: Path, *, cached: bool = False) -> Dataset:
    """Load ML-100K from ``path`` and check 943 users, 1,682 items, 100,000 ratings."""
    try:
        ds = load_ml100k(path)
    except DataError as e:
        raise DataError(f"MovieLens-100K at {path} cannot be loaded: {e}; "
                        f"{_advice(path, cached)}") from e
    found = (ds.n_users, ds.n_items, ds.n_interactions)
    if found != ML100K_SHAPE:
        raise DataError(
            f"MovieLens-100K at {path} looks truncated or corrupt: expected 943 users, "
            f"1,682 items and 100,000 ratings, found {found[0]:,} users, {found[1]:,} items "
            f"and {found[2]:,} ratings; {_advice(path, cached)}"
        )
    return ds


def fetch_ml100k(data_dir: str | Path | None = None, *, allow_download: bool = True) -> Path:
    """The folder holding a verified MovieLens-100K (see the module docstring for the
    search order). Raises DataError if none is found or what is found is corrupt."""
    return _fetch(data_dir, allow_download)[0]


def fetch_and_load_ml100k(data_dir: str | Path | None = None, *,
                          allow_download: bool = True) -> Dataset:
    """:func:`fetch_ml100k` followed by loading (the verification load is reused)."""
    return _fetch(data_dir, allow_download)[1]


def _fetch(data_dir: str | Path | None, allow_download: bool) -> tuple[Path, Dataset]:
    target = ml100k_cache_path()
    cached = find_ml100k(target)
    if cached is not None:
        log.info("ML-100K: using the cache %s", cached)
        return cached, verify_ml100k(cached, cached=True)
    log.info("ML-100K: not in the cache %s", target)

    local = data_dir if data_dir is not None else os.environ.get("DPREC_DATA")
    if local:
        found = find_ml100k(local)
        if found is not None:
            log.info("ML-100K: using the local copy %s", found)
            return found, verify_ml100k(found)
        log.info("ML-100K: no u.data/u.user/u.item or ml-100k.inter/.user/.item in %s "
                 "or its ml-100k subfolder", local)
    else:
        log.info("ML-100K: no data dir given (--data-dir or DPREC_DATA)")

    if not allow_download:
        raise DataError(
            f"MovieLens-100K not found in the cache {target} or the data dir "
            f"({local or 'none given'}) and downloading is disabled; pass --data-dir PATH "
            "pointing at an extracted ml-100k folder, or allow the download"
        )

    errors: list[str] = []
    for source, fetcher in (("GroupLens", _fetch_grouplens), ("registry", _fetch_wheel)):
        log.info("ML-100K: trying the %s download", source)
        try:
            fetcher(target)
        except DataError as e:
            log.info("ML-100K: %s download failed: %s", source, e)
            errors.append(f"{source}: {e}")
            continue
        log.info("ML-100K: downloaded from %s into %s", source, target)
        try:
            return target, verify_ml100k(target, cached=True)
        except DataError:
            shutil.rmtree(target, ignore_errors=True)
            raise
    raise DataError(
        "MovieLens-100K could not be obtained: " + "; ".join(errors) + ". Download "
        f"{ML100K_URL} elsewhere, extract it and pass --data-dir PATH (or set DPREC_DATA)"
    )


def _install(files: dict[str, bytes], target: Path) -> None:
    """Write ``files`` into ``target`` through a temporary sibling folder, so that an
    interrupted fetch never leaves a half-written cache behind."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".ml-100k-", dir=target.parent))
        try:
            for fname, data in files.items():
                (tmp / fname).write_bytes(data)
            target.mkdir(exist_ok=True)
            for fname in files:
                os.replace(tmp / fname, target / fname)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    except OSError as e:
        raise DataError(f"cannot write the cache {target}: {e}; set DPREC_CACHE to a "
                        "writable folder") from e


def _extract(archive: zipfile.ZipFile, members: dict[str, str], required: set[str],
             what: str) -> dict[str, bytes]:
    names = set(archive.namelist())
    missing = sorted(m for m in members if m in required and m not in names)
    if missing:
        raise DataError(f"{what} lacks {', '.join(missing)}")
    return {out: archive.read(m) for m, out in members.items() if m in names}


def _resolves(host: str, timeout: float) -> bool:
    """Whether ``host`` resolves within ``timeout`` seconds (``urlopen``'s own timeout does
    not cover name resolution, which can hang on a machine without network)."""
    result: list[bool] = []

    def lookup() -> None:
        try:
            socket.getaddrinfo(host, 443)
            result.append(True)
        except OSError:
            result.append(False)

    t = threading.Thread(target=lookup, daemon=True)
    t.start()
    t.join(timeout)
    return bool(result and result[0])


def _download_grouplens(url: str = ML100K_URL, timeout: float = GROUPLENS_TIMEOUT_S) -> bytes:
    """The GroupLens zip as bytes; DataError if the site does not answer within ``timeout``."""
    host = urllib.parse.urlparse(url).hostname or ""
    if not _resolves(host, timeout):
        raise DataError(f"cannot resolve {host} within {timeout:g} s (offline?)")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.read()
    except (urllib.error.URLError, OSError, TimeoutError) as e:
        raise DataError(f"cannot download {url}: {e}") from e


def _fetch_grouplens(target: Path) -> None:
    data = _download_grouplens()
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            files = _extract(z, _ZIP_MEMBERS, {f"ml-100k/{f}" for f in
                                               ("u.data", "u.user", "u.item")}, "the zip")
    except zipfile.BadZipFile as e:
        raise DataError(f"{ML100K_URL} is not a valid zip: {e}") from e
    _install(files, target)


def _pip_download(dest: Path) -> Path:
    """Download the ``recbole==1.2.1`` wheel (no dependencies) into ``dest``; its path."""
    cmd = [sys.executable, "-m", "pip", "download", RECBOLE_REQUIREMENT, "--no-deps",
           "--only-binary", ":all:", "--disable-pip-version-check", "-q", "-d", str(dest)]
    log.info("ML-100K: running %s", " ".join(cmd))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT_S,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise DataError(f"pip download failed: {e}") from e
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise DataError(f"pip download {RECBOLE_REQUIREMENT} failed "
                        f"(exit {proc.returncode}): {' | '.join(tail)}")
    wheels = sorted(dest.glob("recbole-*.whl"))
    if not wheels:
        raise DataError(f"pip download {RECBOLE_REQUIREMENT} produced no wheel in {dest}")
    return wheels[0]


def _fetch_wheel(target: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="dprec-recbole-") as tmp:
        wheel = _pip_download(Path(tmp))
        try:
            with zipfile.ZipFile(wheel) as z:
                files = _extract(z, _WHEEL_MEMBERS, set(_WHEEL_MEMBERS), wheel.name)
        except zipfile.BadZipFile as e:
            raise DataError(f"{wheel.name} is not a valid wheel: {e}") from e
    _install(files, target)
