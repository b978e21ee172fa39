"""The project's size rules (STYLE: no file over 600 lines, no function over 80) hold in the
packages cleaned so far; a package joins :data:`CHECKED` once it meets them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import dprec

ROOT = Path(dprec.__file__).parent
CHECKED = ("privacy", "models")
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80


def oversized(root: Path) -> list[str]:
    """Every file over :data:`MAX_FILE_LINES` lines and every function (methods and nested
    functions included) over :data:`MAX_FUNCTION_LINES` lines below ``root``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text()
        lines = text.count("\n")
        if lines > MAX_FILE_LINES:
            found.append(f"{path}: {lines} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.append(f"{path}:{node.lineno} {node.name}: {length} lines")
    return found


@pytest.mark.parametrize("package", CHECKED)
def test_no_file_or_function_is_too_long(package):
    assert oversized(ROOT / package) == []


def test_the_check_finds_a_long_file_and_a_long_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    (tmp_path / "long_function.py").write_text(f"def f():\n{body}\n")
    (tmp_path / "long_file.py").write_text("x = 1\n" * (MAX_FILE_LINES + 1))
    (tmp_path / "fine.py").write_text("def g():\n    return 1\n")
    found = oversized(tmp_path)
    assert len(found) == 2
    assert any("long_function.py:1 f: 81 lines" in f for f in found)
    assert any("long_file.py: 601 lines" in f for f in found)
