"""Client code never imports server code and vice versa (DESIGN.md, 'Three roles')."""

import ast
from pathlib import Path

import dprec

ROOT = Path(dprec.__file__).parent


def _imports(path: Path) -> set[str]:
    mods: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            mods.add(node.module)
            mods.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            mods.update(a.name for a in node.names)
    return mods


def test_clients_and_servers_do_not_import_each_other():
    clients = list(ROOT.rglob("client.py"))
    servers = list(ROOT.rglob("server.py"))
    assert clients and servers
    for c in clients:
        assert not any(m.endswith(".server") or ".server." in m for m in _imports(c)), c
    for s in servers:
        assert not any(m.endswith(".client") or ".client." in m for m in _imports(s)), s
