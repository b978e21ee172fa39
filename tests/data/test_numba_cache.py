"""A read-only install still runs the numba kernels: their cache moves to a private folder.

Before: with the package and the home folder read-only, every ``@numba.njit(cache=True)``
raised at import, so every DPLCF and FMF run crashed.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

import dprec
from dprec import _numba_cache_dir


@pytest.fixture
def tmpdir_(tmp_path, monkeypatch) -> Path:
    """A private temporary folder standing in for the system's."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp


def test_an_unwritable_package_gets_a_private_cache_folder(tmp_path, tmpdir_):
    env: dict[str, str] = {}
    chosen = _numba_cache_dir(tmp_path / "not-writable", env)  # does not exist: not writable
    assert chosen == env["NUMBA_CACHE_DIR"] == str(tmpdir_ / f"dprec-numba-{os.getuid()}")
    st = os.stat(chosen)
    assert stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.getuid()


def test_a_writable_package_or_a_user_setting_is_left_alone(tmp_path, tmpdir_):
    env = {"NUMBA_CACHE_DIR": "/mine"}
    assert _numba_cache_dir(tmp_path / "not-writable", env) is None
    assert env == {"NUMBA_CACHE_DIR": "/mine"}
    env = {}
    assert _numba_cache_dir(tmp_path, env) is None and env == {}


def test_a_folder_planted_by_someone_else_is_not_trusted(tmp_path, tmpdir_):
    """numba loads pickles from its cache: a world-writable folder at the predictable path
    is not used."""
    planted = tmpdir_ / f"dprec-numba-{os.getuid()}"
    planted.mkdir()
    planted.chmod(0o777)
    env: dict[str, str] = {}
    chosen = _numba_cache_dir(tmp_path / "not-writable", env)
    assert chosen is not None and Path(chosen) != planted
    assert Path(chosen).parent == tmpdir_ and stat.S_IMODE(os.stat(chosen).st_mode) == 0o700


def _clean_env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env.update(TMPDIR=str(tmp), **extra)
    return env


def test_numba_caches_into_the_folder_set_after_it_was_imported(tmp_path, tmpdir_):
    """numba reads NUMBA_CACHE_DIR when it is imported; the setting still takes effect."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "kernel.py").write_text(textwrap.dedent("""
        import numba

        @numba.njit(cache=True)
        def f(x):
            return x + 1
    """))
    script = textwrap.dedent("""
        import pathlib, sys
        import numba  # noqa: F401  (imported first, as a user's script may)
        import dprec
        chosen = dprec._numba_cache_dir(pathlib.Path(sys.argv[1]))
        sys.path.insert(0, sys.argv[2])
        import kernel
        assert kernel.f(2) == 3
        print(chosen)
    """)
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "not-writable"),
                          str(src)], capture_output=True, text=True, timeout=120,
                         env=_clean_env(tmpdir_))
    assert out.returncode == 0, out.stderr
    chosen = Path(out.stdout.strip().splitlines()[-1])
    assert chosen.parent == tmpdir_
    assert list(chosen.rglob("*.nbi")), "numba wrote no cache index into the chosen folder"
    assert not list(src.rglob("*.nbi"))


def _read_only_run(install: Path, code: str, env: dict[str, str]):
    """Run ``code`` with ``install`` read-only: by permissions for an ordinary user, by a
    read-only bind mount in a private mount namespace for root (skipped where not allowed)."""
    python = [sys.executable, "-c", code]
    if os.geteuid() != 0:
        for p in [install, *install.rglob("*")]:
            p.chmod(p.stat().st_mode & ~0o222)
        try:
            return subprocess.run(python, capture_output=True, text=True, timeout=120, env=env)
        finally:
            for p in [install, *install.rglob("*")]:
                p.chmod(p.stat().st_mode | 0o200)
    probe = subprocess.run(["unshare", "--mount", "true"], capture_output=True, check=False) \
        if shutil.which("unshare") else None
    if probe is None or probe.returncode != 0:
        pytest.skip("root, and no private mount namespace to make a read-only install")
    shell = f'mount --bind -o ro "{install}" "{install}" && exec "$0" "$@"'
    return subprocess.run(["unshare", "--mount", "sh", "-c", shell, *python],
                          capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX permissions")
def test_a_read_only_install_without_a_home_imports_the_kernels(tmp_path, tmpdir_):
    install = tmp_path / "install"
    shutil.copytree(Path(dprec.__file__).parent, install / "dprec",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (install / "home").mkdir()  # read-only too: numba's user-wide cache cannot be made
    out = _read_only_run(install, "import dprec.models.als, dprec.systems.fmf.client",
                         _clean_env(tmpdir_, PYTHONPATH=str(install), HOME=str(install / "home")))
    assert out.returncode == 0, out.stderr
    assert (tmpdir_ / f"dprec-numba-{os.getuid()}").is_dir()
