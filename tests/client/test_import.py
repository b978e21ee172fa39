"""The SDK installs and imports without the server extras and never reaches server code."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

BLOCK = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in {"fastapi", "uvicorn", "starlette"}:
            raise ImportError(f"blocked: {name}")
sys.meta_path.insert(0, Block())
import dprec.client
from dprec.client import DeviceClient, DiskLedger, SecureSource
SecureSource().generator().random()
bad = sorted(m for m in sys.modules if m.startswith("dprec.services")
             or m.rsplit(".", 1)[-1] == "server")
assert not bad, bad
print("ok")
"""


@pytest.mark.slow  # a fresh interpreter
def test_sdk_imports_without_the_server_extras():
    out = subprocess.run([sys.executable, "-c", BLOCK], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


@pytest.mark.slow  # a fresh interpreter per SDK module
def test_sdk_never_imports_server_code_even_lazily():
    path = Path(__file__).parents[1] / "systems" / "test_architecture.py"
    spec = importlib.util.spec_from_file_location("_architecture", path)
    arch = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(arch)
    root = Path(importlib.util.find_spec("dprec.client").origin).parent
    for f in root.glob("*.py"):
        name = "dprec.client" if f.stem == "__init__" else f"dprec.client.{f.stem}"
        reached = arch._closure(name)
        bad = {m for m in reached
               if m.rsplit(".", 1)[-1] == "server" or m.startswith("dprec.services")}
        assert not bad, f"{name} reaches {bad}"
