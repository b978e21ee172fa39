"""The larger MovieLens releases (ML-1M, -10M, -20M, -25M) from GroupLens into dprec's cache.

:func:`fetch_movielens` downloads ``<base>/<name>.zip`` (base: the argument, else
``$DPREC_GROUPLENS_URL``, else :data:`GROUPLENS_BASE_URL`) and keeps it only if it is the
published release, byte for byte: its size, sha256 and md5 must equal the values pinned in
:data:`ARCHIVES`. The rating and movie files are then extracted into ``cache_dir()/<name>``
with a ``manifest.json`` of their sha256, checked on every load (:func:`load_cached`), the
same checksummed cache as ML-100K (:mod:`dprec.data.fetch`).

Guarantees:
- the cache folder appears whole or not at all: files are extracted into a temporary sibling
  folder that is renamed into place last;
- the download goes to ``cache_dir()/partial/<name>.zip.part``. A dropped connection is
  retried (:data:`RETRIES` times), resuming with an HTTP ``Range`` request, or from byte 0
  if the server ignores ranges; if the network stays down the partial file is kept and the
  next run resumes it. A server that offers another size, and a finished file whose
  checksum differs, are errors and the partial file is deleted.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import logging
import os
import re
import shutil
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dprec.data.fetch import MANIFEST, cache_dir, host_resolves
from dprec.errors import DataError

__all__ = [
    "ARCHIVES", "Archive", "BASE_URL_ENV", "GROUPLENS_BASE_URL", "READ_TIMEOUT_S", "RETRIES",
    "RETRY_WAIT_S", "Progress", "base_url", "fetch_movielens", "load_cached",
    "movielens_cache_path", "partial_path",
]

log = logging.getLogger(__name__)

GROUPLENS_BASE_URL = "https://files.grouplens.org/datasets/movielens"
BASE_URL_ENV = "DPREC_GROUPLENS_URL"
"""Environment variable naming another base URL (a mirror, or a test server)."""
READ_TIMEOUT_S = 30.0
RETRIES = 4
"""Further attempts after a dropped connection (each resumes where the last stopped)."""
RETRY_WAIT_S = 2.0
"""Seconds before retry ``i`` (1-based): ``RETRY_WAIT_S * i``."""
_BLOCK = 1 << 20

Progress = Callable[[int, int], None]
"""Called with (bytes downloaded so far, bytes in the release) as the download advances."""


@dataclass(frozen=True)
class Archive:
    """A published GroupLens zip: what a byte-exact copy has, and the files dprec keeps."""

    name: str
    size: int
    """Bytes."""
    sha256: str
    md5: str
    """GroupLens' own published checksum (``<name>.zip.md5`` next to the zip)."""
    folder: str
    """The zip's top folder."""
    members: tuple[str, ...]
    """Files kept from ``folder`` (all required)."""

    @property
    def filename(self) -> str:
        """The zip's file name on the server."""
        return f"{self.name}.zip"


# Where each pinned value comes from (no network here: they were looked up, not measured).
# - size and sha256 of ml-1m, ml-20m, ml-25m: tensorflow/datasets,
#   tensorflow_datasets/url_checksums/movielens.txt (commit 1c076ac3c19c8ea83e1d1a75e0623c9a
#   699e0d7c); ml-20m's size also matches academictorrents.com's copy (info hash
#   296054417b4d8eeeb4c7b1c842570bf792ee4d14: 198,702,078 bytes).
# - size and sha256 of ml-10m (not in tensorflow_datasets): a public research script that
#   pins the archive by bytes, sha256 and GroupLens' md5 together (found in a code index
#   whose excerpt does not name the repository); the md5 there is GroupLens' published one,
#   and checking all three means a wrong sha256 can only refuse the real file, never
#   accept another.
# - md5 of all four: GroupLens' sidecar files https://files.grouplens.org/datasets/movielens/
#   <name>.zip.md5, as pinned by eli-osherovich/papers_with_code
#   (datasets/movielens/dl_config.py) and several other projects.
ARCHIVES: dict[str, Archive] = {
    "ml-1m": Archive(
        "ml-1m", 5_917_549,
        "a6898adb50b9ca05aa231689da44c217cb524e7ebd39d264c56e2832f2c54e20",
        "c4d9eecfca2ab87c1945afe126590906",
        "ml-1m", ("ratings.dat", "users.dat", "movies.dat")),
    "ml-10m": Archive(
        "ml-10m", 65_566_137,
        "813c411ccb6122564edfe752e7f80c4dcc5aa25fa94c93622f6877a7ba252862",
        "ce571fd55effeba0271552578f2648bd",
        "ml-10M100K", ("ratings.dat", "movies.dat")),
    "ml-20m": Archive(
        "ml-20m", 198_702_078,
        "96f243c338a8665f6bcc89c53edf6ee39162a846940de6b7c8c48aeada765ff3",
        "cd245b17a1ae2cc31bb14903e1204af3",
        "ml-20m", ("ratings.csv", "movies.csv")),
    "ml-25m": Archive(
        "ml-25m", 261_978_986,
        "8b21cfb7eb1706b4ec0aac894368d90acf26ebdfb6aced3ebd4ad5bd1eb9c6aa",
        "6b51fb2759a8657d3bfcbfc42b592ada",
        "ml-25m", ("ratings.csv", "movies.csv")),
}
"""The downloadable MovieLens releases by data set name (tests replace entries)."""

_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")


def base_url(override: str | None = None) -> str:
    """The base URL downloads come from: ``override``, ``$DPREC_GROUPLENS_URL``, GroupLens."""
    return (override or os.environ.get(BASE_URL_ENV) or GROUPLENS_BASE_URL).rstrip("/")


def movielens_cache_path(name: str) -> Path:
    """Where the release ``name`` is kept once fetched."""
    return cache_dir() / name


def partial_path(name: str) -> Path:
    """Where the download of ``name`` accumulates until it is verified."""
    return cache_dir() / "partial" / f"{name}.zip.part"


def _archive(name: str) -> Archive:
    try:
        return ARCHIVES[name]
    except KeyError:
        raise DataError(f"{name} cannot be downloaded; downloadable: "
                        f"{', '.join(ARCHIVES)} (and ml-100k)") from None


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(_BLOCK), b""):
            h.update(block)
    return h.hexdigest()


def load_cached(name: str) -> Path | None:
    """The cache folder of ``name`` after checking every file against its manifest; None if
    ``name`` was never fetched. DataError if the folder was changed since."""
    arch = _archive(name)
    folder = movielens_cache_path(name)
    if not folder.is_dir():
        return None
    advice = (f"delete the folder {folder} (e.g. `rm -r {folder}`) and run "
              f"`dprec data fetch {name}` again")
    try:
        files = json.loads((folder / MANIFEST).read_text())["sha256"]
        if not isinstance(files, dict):
            raise ValueError("no sha256 table")
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise DataError(f"{folder}: {MANIFEST} is missing or unreadable ({e}); {advice}") from e
    missing = [m for m in arch.members if m not in files]
    if missing:
        raise DataError(f"{folder / MANIFEST} does not list {', '.join(missing)}; {advice}")
    bad = [f for f, digest in sorted(files.items())
           if not (folder / f).is_file() or _file_sha256(folder / f) != digest]
    if bad:
        raise DataError(f"{arch.name} in {folder}: {', '.join(bad)} changed since it was "
                        f"fetched (sha256 differs from {MANIFEST}); {advice}")
    return folder


def fetch_movielens(name: str, *, url: str | None = None,
                    progress: Progress | None = None) -> Path:
    """The cache folder holding the verified release ``name`` (one of :data:`ARCHIVES`),
    downloading it from ``base_url(url)`` if it is not cached yet."""
    arch = _archive(name)
    cached = load_cached(name)
    if cached is not None:
        log.info("%s: using the cache %s", name, cached)
        return cached
    source = f"{base_url(url)}/{arch.filename}"
    part = partial_path(name)
    _download(source, part, arch, progress)
    try:
        _verify(part, arch, source)
        return _install(part, arch, source)
    finally:
        part.unlink(missing_ok=True)


def _download(url: str, part: Path, arch: Archive, progress: Progress | None) -> None:
    """Bring ``part`` to ``arch.size`` bytes from ``url``, resuming after a dropped
    connection. DataError (and ``part`` deleted) if the server offers another size."""
    try:
        part.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise DataError(f"cannot write the cache {part.parent}: {e}; set DPREC_CACHE to a "
                        "writable folder") from e
    if part.exists() and part.stat().st_size > arch.size:
        part.unlink()
    host = urllib.parse.urlparse(url).hostname or ""
    if not host_resolves(host, READ_TIMEOUT_S):
        raise DataError(f"cannot resolve {host} (offline?); download {url} elsewhere, "
                        f"extract it and pass --data-dir PATH")
    failures: list[str] = []
    for attempt in range(RETRIES + 1):
        have = part.stat().st_size if part.exists() else 0
        if have == arch.size:
            return
        if attempt:
            time.sleep(RETRY_WAIT_S * attempt)
        try:
            _get(url, part, have, arch, progress)
        except (urllib.error.URLError, http.client.HTTPException, OSError) as e:
            if isinstance(e, urllib.error.HTTPError) and e.code < 500:
                raise DataError(f"{url}: HTTP {e.code} {e.reason}; check the URL "
                                f"(--url or ${BASE_URL_ENV})") from e
            failures.append(f"{type(e).__name__}: {e}")
            log.warning("%s: download interrupted at %d of %d bytes (%s); retrying", arch.name,
                        part.stat().st_size if part.exists() else 0, arch.size, e)
    have = part.stat().st_size if part.exists() else 0
    if have == arch.size:
        return
    raise DataError(
        f"{url}: the download kept failing ({'; '.join(failures[-2:])}); {have:,} of "
        f"{arch.size:,} bytes are kept in {part}: run the command again to resume, or "
        "download the zip elsewhere, extract it and pass --data-dir PATH"
    )


def _offered_size(response: http.client.HTTPResponse, have: int) -> int | None:
    """The size of the server's file from the response headers (None if not stated)."""
    if response.status == 206:
        m = _CONTENT_RANGE.fullmatch(response.headers.get("Content-Range", "").strip())
        if m and m.group(3) != "*":
            return int(m.group(3))
        return None
    length = response.headers.get("Content-Length")
    return int(length) if length and length.isdigit() else None


def _get(url: str, part: Path, have: int, arch: Archive, progress: Progress | None) -> None:
    """One request: append to ``part`` from byte ``have`` (restart if ranges are ignored)."""
    headers = {"Range": f"bytes={have}-"} if have else {}
    request = urllib.request.Request(url, headers=headers)
    try:
        response = urllib.request.urlopen(request, timeout=READ_TIMEOUT_S)
    except urllib.error.HTTPError as e:
        if e.code == 416:
            part.unlink(missing_ok=True)
            raise DataError(f"{url}: the server's file ends before {have:,} bytes, but "
                            f"{arch.name}.zip has {arch.size:,}: it is not the published "
                            "release (the partial download was deleted)") from e
        raise
    with response:
        if have and response.status != 206:
            log.info("%s: the server ignores Range; restarting from byte 0", arch.name)
            have = 0
        offered = _offered_size(response, have)
        if offered is not None and offered != arch.size:
            part.unlink(missing_ok=True)
            raise DataError(f"{url}: the server offers {offered:,} bytes, but {arch.name}.zip "
                            f"has {arch.size:,}: it is truncated or not the published "
                            "release; nothing was kept")
        done = have
        with part.open("ab" if have else "wb") as f:
            while block := response.read(_BLOCK):
                f.write(block)
                done += len(block)
                if done > arch.size:
                    break
                if progress is not None:
                    progress(done, arch.size)
    if done > arch.size:
        part.unlink(missing_ok=True)
        raise DataError(f"{url}: more than {arch.size:,} bytes arrived, the size of "
                        f"{arch.name}.zip: it is not the published release; nothing was kept")
    if done < arch.size:
        raise ConnectionError(f"the response ended at {done:,} of {arch.size:,} bytes")


def _verify(part: Path, arch: Archive, url: str) -> None:
    """The downloaded zip is the published release: size, sha256 and md5."""
    size = part.stat().st_size
    sha = hashlib.sha256()
    md5 = hashlib.md5(usedforsecurity=False)
    with part.open("rb") as f:
        for block in iter(lambda: f.read(_BLOCK), b""):
            sha.update(block)
            md5.update(block)
    found = (size, sha.hexdigest(), md5.hexdigest())
    expected = (arch.size, arch.sha256, arch.md5)
    if found != expected:
        what = [k for k, a, b in zip(("size", "sha256", "md5"), found, expected, strict=True)
                if a != b]
        raise DataError(
            f"{url}: the download is corrupt or not the published {arch.name}.zip: its "
            f"{' and '.join(what)} differ (sha256 {found[1][:16]}..., expected "
            f"{arch.sha256[:16]}...; {size:,} bytes, expected {arch.size:,}); it was deleted "
            "and nothing was kept in the cache: run the command again, or download the zip "
            "elsewhere, check it and pass --data-dir PATH"
        )


def _install(zip_path: Path, arch: Archive, source: str) -> Path:
    """Extract ``arch.members`` into the cache folder (whole or not at all) with a manifest."""
    target = movielens_cache_path(arch.name)
    tmp = Path(tempfile.mkdtemp(prefix=f".{arch.name}-", dir=target.parent))
    try:
        digests: dict[str, str] = {}
        try:
            with zipfile.ZipFile(zip_path) as z:
                names = set(z.namelist())
                missing = [m for m in arch.members if f"{arch.folder}/{m}" not in names]
                if missing:
                    raise DataError(f"{source} lacks {', '.join(missing)} in {arch.folder}/")
                for m in arch.members:
                    h = hashlib.sha256()
                    with z.open(f"{arch.folder}/{m}") as src, (tmp / m).open("wb") as dst:
                        for block in iter(lambda src=src: src.read(_BLOCK), b""):
                            h.update(block)
                            dst.write(block)
                    digests[m] = h.hexdigest()
        except (zipfile.BadZipFile, zipfile.LargeZipFile) as e:
            raise DataError(f"{source} is not a readable zip: {e}") from e
        manifest = {"dataset": arch.name, "source": source, "archive_sha256": arch.sha256,
                    "sha256": digests}
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        os.rename(tmp, target)
    except OSError as e:
        raise DataError(f"cannot write the cache {target}: {e}; if the folder exists, delete "
                        "it; else set DPREC_CACHE to a writable folder") from e
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log.info("%s: verified and extracted into %s", arch.name, target)
    return target
