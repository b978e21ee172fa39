"""dprec: recommendation under differential privacy when the recommender is not trusted."""

import os
import stat
import sys
import tempfile
from collections.abc import MutableMapping
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

try:
    __version__ = version("dprec")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = ["__version__"]


def _numba_cache_dir(package_dir: Path,
                     environ: MutableMapping[str, str] = os.environ) -> str | None:
    """Point numba's cache at a private temporary folder when the install is read-only.

    numba caches ``cache=True`` kernels beside their source (``__pycache__``), else under the
    home folder; with neither writable, every such function raises at import. If
    ``NUMBA_CACHE_DIR`` is unset and ``package_dir`` cannot be written, it is set to
    ``<tmp>/dprec-numba-<uid>`` (created 0700; a folder there that is not ours and private
    is not trusted, a fresh one is made instead). Returns the folder set, else None.
    """
    if environ.get("NUMBA_CACHE_DIR"):
        return None
    pycache = package_dir / "__pycache__"
    if os.access(pycache if pycache.is_dir() else package_dir, os.W_OK):
        return None
    uid = os.getuid() if hasattr(os, "getuid") else None
    path = Path(tempfile.gettempdir()) / f"dprec-numba-{uid if uid is not None else 'user'}"
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        st = path.lstat()
        private = (stat.S_ISDIR(st.st_mode) and not st.st_mode & 0o022
                   and (uid is None or st.st_uid == uid) and os.access(path, os.W_OK))
        if not private:
            path = Path(tempfile.mkdtemp(prefix="dprec-numba-"))
    except OSError:
        return None
    environ["NUMBA_CACHE_DIR"] = str(path)
    config = sys.modules.get("numba.core.config")  # numba read its settings already
    if config is not None and environ is os.environ:
        config.CACHE_DIR = str(path)  # type: ignore[attr-defined]
    return str(path)


_numba_cache_dir(Path(__file__).parent)
