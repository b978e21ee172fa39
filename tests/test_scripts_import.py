"""Every module under benchmarks/, experiments/ and scripts/ imports (issue 31 §4: ``make
bench`` failed on ``bench_services.py``'s imports of helpers that had moved), and runs
nothing when imported: each script's work sits under ``if __name__ == "__main__"``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
FOLDERS = ("benchmarks", "experiments", "scripts")
LIBRARIES = {"benchmarks/harness.py"}
"""Modules the scripts import, with no command of their own."""

_IMPORT_ALL = """
import importlib.util, json, sys, traceback
from pathlib import Path
failed = {}
for path in map(Path, json.loads(sys.argv[1])):
    sys.path.insert(0, str(path.parent))  # what running the script would put first
    name = f"smoke_{path.parent.name}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as e:
        failed[str(path)] = "".join(traceback.format_exception_only(e)).strip()
    finally:
        sys.path.remove(str(path.parent))
print(json.dumps(failed))
"""


def _scripts() -> list[Path]:
    return sorted(p for folder in FOLDERS for p in (ROOT / folder).glob("*.py"))


def test_there_are_scripts_to_check():
    names = {p.relative_to(ROOT).as_posix() for p in _scripts()}
    assert "benchmarks/bench_services.py" in names and "scripts/reproduce.py" in names


@pytest.mark.slow  # a fresh interpreter imports every script
def test_every_script_imports_without_running():
    scripts = _scripts()
    r = subprocess.run([sys.executable, "-c", _IMPORT_ALL, json.dumps([str(p) for p in scripts])],
                       capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    failed = json.loads(r.stdout.strip().splitlines()[-1])
    assert failed == {}, "\n".join(f"{k}: {v}" for k, v in failed.items())


def test_every_script_guards_its_main():
    unguarded = [p.relative_to(ROOT).as_posix() for p in _scripts()
                 if p.relative_to(ROOT).as_posix() not in LIBRARIES
                 and 'if __name__ == "__main__":' not in p.read_text()]
    assert unguarded == []
