"""MovieLens-100K that works offline: local copy, cache, GroupLens, then a registry wheel.

:func:`fetch_ml100k` looks, in order, in
1. ``data_dir`` or the ``DPREC_DATA`` environment variable (the folder itself or its
   ``ml-100k`` subfolder, in the GroupLens layout ``u.data/u.user/u.item`` or RecBole's
   atomic files ``ml-100k.inter/.user/.item``): a folder the user names wins over the cache;
2. the cache (``cache_dir()/ml-100k``);
3. the GroupLens zip (3 s timeout), extracting ``u.data/u.user/u.item/u.genre``;
4. the wheel ``recbole==1.2.1`` from the package registry (``pip download --no-deps``),
   extracting only ``recbole/dataset_example/ml-100k/ml-100k.{inter,user,item}``.
Downloads land in the cache; MovieLens files are never part of the repository (their
licence forbids redistribution). Whatever is found is loaded and checked: 943 users, 1,682
items, 100,000 ratings inside the release's time span. The loaded dataset's history starts
with ``source: data-dir PATH``, ``source: cache PATH`` or ``source: download from ...``.

Content: a download must match the published release (the sha256 of RecBole's three files,
or for the GroupLens layout the sha256 of the ratings themselves,
:meth:`Dataset.content_sha256`; one that does not is removed and the next source tried),
and the cache keeps a manifest (``manifest.json``) of the
sha256 of every file, checked on every load, so an edit that keeps the shape (e.g. shuffled
timestamps) is caught. A cache without a manifest (from an older dprec) is accepted if it
matches the release, and the manifest is written then. A ``data_dir`` copy that differs from
the release is loaded with a warning, and the history says so.
"""

from __future__ import annotations

import hashlib
import io
import json
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
from dprec.data.loaders import (
    ATOMIC_FILES,
    GROUPLENS_FILES,
    find_ml100k,
    load_ml100k,
    ml100k_layout,
)
from dprec.errors import DataError

__all__ = [
    "GROUPLENS_TIMEOUT_S", "MANIFEST", "ML100K_ATOMIC_SHA256", "ML100K_RATINGS_SHA256",
    "ML100K_SHAPE", "ML100K_URL", "PIP_TIMEOUT_S", "RECBOLE_REQUIREMENT", "cache_dir",
    "fetch_and_load_ml100k", "fetch_ml100k", "host_resolves", "ml100k_cache_path",
    "verify_ml100k",
]

log = logging.getLogger(__name__)

ML100K_URL = "https://files.grouplens.org/datasets/movielens/ml-100k.zip"
RECBOLE_REQUIREMENT = "recbole==1.2.1"
ML100K_SHAPE = (943, 1682, 100_000)
GROUPLENS_TIMEOUT_S = 3.0
PIP_TIMEOUT_S = 300.0
MANIFEST = "manifest.json"
ML100K_ATOMIC_SHA256 = {
    "ml-100k.inter": "4edb74e2a81178c2ba9ff381495f754f996c4aea351b1272ca36b43da0935eff",
    "ml-100k.item": "51d7cdf777ce5c0f5b32c1d947a4a81fe07d75e78abbe761e0cd4d0756064532",
    "ml-100k.user": "4f670007d9cfbeb9807e757209af1555b9bcc186bde25e767f67cb67c6dd5972",
}
"""sha256 of the files in the ``recbole==1.2.1`` wheel (checked against a verified fetch)."""
ML100K_RATINGS_SHA256 = "8bc77fa969198de57d74c53e6d273c33b1997e7525a83990f9d04269d766bb23"
""":meth:`Dataset.content_sha256` of the 100,000 ratings of MovieLens-100K (either layout)."""
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
        return (f"the cache is corrupt: delete the folder {path} (e.g. `rm -r {path}`) and "
                "run `dprec data fetch ml-100k` to download it again, or pass --data-dir PATH "
                "pointing at an extracted ml-100k folder")
    return ("check that it is a complete, unmodified copy of MovieLens-100K, or pass "
            "--data-dir PATH pointing at another one")


def verify_ml100k(path: Path, *, cached: bool = False, source: str | None = None) -> Dataset:
    """Load ML-100K from ``path`` and check 943 users, 1,682 items, 100,000 ratings."""
    try:
        ds = load_ml100k(path, source=source)
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


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _layout_files(folder: Path) -> list[str]:
    """The files of the folder's ML-100K layout (with ``u.genre`` if present)."""
    if ml100k_layout(folder) == "grouplens":
        return [*GROUPLENS_FILES, *(["u.genre"] if (folder / "u.genre").is_file() else [])]
    return list(ATOMIC_FILES)


def _release_mismatch(folder: Path, ds: Dataset | None) -> str | None:
    """How the folder differs from the published MovieLens-100K, or None if it matches.
    RecBole's layout is checked file by file, GroupLens' by the ratings' content (needs
    ``ds``, the loaded data)."""
    if ml100k_layout(folder) == "atomic":
        bad = [f for f in ATOMIC_FILES if _sha256(folder / f) != ML100K_ATOMIC_SHA256[f]]
        return f"{', '.join(bad)} differ from the release (sha256)" if bad else None
    if ds is None:
        return None
    digest = ds.content_sha256()
    if digest != ML100K_RATINGS_SHA256:
        return (f"the ratings in u.data differ from the release (content sha256 "
                f"{digest[:16]}..., expected {ML100K_RATINGS_SHA256[:16]}...)")
    return None


def _write_manifest(folder: Path, files: dict[str, str], source: str) -> None:
    """``manifest.json``: the sha256 of each file, written atomically."""
    text = json.dumps({"dataset": "ml-100k", "source": source, "sha256": files},
                      indent=1, sort_keys=True)
    fd, tmp = tempfile.mkstemp(prefix=".manifest-", dir=folder)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text + "\n")
        os.replace(tmp, folder / MANIFEST)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _read_manifest(folder: Path) -> dict[str, str] | None:
    """The manifest's {file: sha256}, None if there is none; DataError if unreadable."""
    path = folder / MANIFEST
    if not path.exists():
        return None
    try:
        files = json.loads(path.read_text())["sha256"]
        if not (isinstance(files, dict) and files
                and all(isinstance(v, str) for v in files.values())):
            raise ValueError("no sha256 table")
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise DataError(f"{path} is unreadable ({e}); {_advice(folder, True)}") from e
    return files


def _load_cache(folder: Path) -> Dataset:
    """Load the cached copy after checking it against its manifest (or, without one, against
    the release, then writing the manifest)."""
    files = _read_manifest(folder)
    if files is not None:
        missing = [f for f in _layout_files(folder) if f not in files]
        if missing:
            raise DataError(f"{folder / MANIFEST} does not list {', '.join(missing)}; "
                            f"{_advice(folder, True)}")
        bad = [f for f, digest in sorted(files.items())
               if not (folder / f).is_file() or _sha256(folder / f) != digest]
        if bad:
            raise DataError(f"MovieLens-100K in {folder}: {', '.join(bad)} changed since it "
                            f"was fetched (sha256 differs from {MANIFEST}); "
                            f"{_advice(folder, True)}")
        return verify_ml100k(folder, cached=True, source="cache")
    if ml100k_layout(folder) == "atomic":
        problem = _release_mismatch(folder, None)
        if problem:
            raise DataError(f"MovieLens-100K in {folder}: {problem}; "
                            f"{_advice(folder, True)}")
    ds = verify_ml100k(folder, cached=True, source="cache")
    problem = _release_mismatch(folder, ds)
    if problem:
        raise DataError(f"MovieLens-100K in {folder}: {problem}; {_advice(folder, True)}")
    try:
        _write_manifest(folder, {f: _sha256(folder / f) for f in _layout_files(folder)},
                        "cache without a manifest; matched the release")
        log.info("ML-100K: the cache %s matches the release; wrote %s", folder, MANIFEST)
    except OSError as e:
        log.warning("ML-100K: cannot write %s into %s (%s); it is checked against the "
                    "release on every load", MANIFEST, folder, e)
    return ds


def _fetch(data_dir: str | Path | None, allow_download: bool) -> tuple[Path, Dataset]:
    target = ml100k_cache_path()
    local = data_dir if data_dir is not None else os.environ.get("DPREC_DATA")
    if local:
        found = find_ml100k(local)
        if found is not None:
            log.info("ML-100K: using the data dir %s", found)
            ds = verify_ml100k(found, source="data-dir")
            problem = _release_mismatch(found, ds)
            if problem:
                log.warning("ML-100K in %s is not the published release: %s", found, problem)
                ds = ds.with_history(f"content: not the published release ({problem})")
            return found, ds
        log.warning("ML-100K: no u.data/u.user/u.item or ml-100k.inter/.user/.item in %s "
                    "or its ml-100k subfolder; looking in the cache %s", local, target)
    else:
        log.info("ML-100K: no data dir given (--data-dir or DPREC_DATA)")

    cached = find_ml100k(target)
    if cached is not None:
        log.info("ML-100K: using the cache %s", cached)
        return cached, _load_cache(cached)
    log.info("ML-100K: not in the cache %s", target)

    if not allow_download:
        raise DataError(
            f"MovieLens-100K not found in the data dir ({local or 'none given'}) or the "
            f"cache {target} and downloading is disabled; pass --data-dir PATH pointing at "
            "an extracted ml-100k folder, or allow the download"
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
            ds = verify_ml100k(target, cached=True, source=f"download from {source} into")
            problem = _release_mismatch(target, ds)
            if problem:
                raise DataError(f"the {source} download is not the published MovieLens-100K: "
                                f"{problem}; nothing was kept in the cache")
            return target, ds
        except DataError as e:
            shutil.rmtree(target, ignore_errors=True)
            log.warning("ML-100K: %s", e)
            errors.append(f"{source}: {e}")
    raise DataError(
        "MovieLens-100K could not be obtained: " + "; ".join(errors) + ". Download "
        f"{ML100K_URL} elsewhere, extract it and pass --data-dir PATH (or set DPREC_DATA)"
    )


def _install(files: dict[str, bytes], target: Path, source: str) -> None:
    """Write ``files`` and their manifest into ``target`` through a temporary sibling
    folder, so that an interrupted fetch never leaves a half-written cache behind (the
    manifest moves last: without it the files are checked against the release)."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".ml-100k-", dir=target.parent))
        try:
            for fname, data in files.items():
                (tmp / fname).write_bytes(data)
            _write_manifest(tmp, {f: hashlib.sha256(d).hexdigest() for f, d in files.items()},
                            source)
            target.mkdir(exist_ok=True)
            for fname in [*files, MANIFEST]:
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


def host_resolves(host: str, timeout: float) -> bool:
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
    if not host_resolves(host, timeout):
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
    _install(files, target, ML100K_URL)


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
    _install(files, target, RECBOLE_REQUIREMENT)
