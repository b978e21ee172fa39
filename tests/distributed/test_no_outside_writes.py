"""The sharded backend changes proxy and server state only through their methods
(issue 22 §2): no attribute of a proxy or server is assigned in dprec.distributed."""

import ast
from pathlib import Path

import dprec.distributed

ROLES = {"proxy", "server"}


def _outside_writes(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign))
                   else [])
        for t in targets:
            for sub in ast.walk(t):
                if (isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name)
                        and sub.value.id in ROLES):
                    found.append(f"{sub.value.id}.{sub.attr} (line {sub.lineno})")
    return found


def test_the_guard_sees_a_write():
    assert _outside_writes("proxy.batches = b\nserver.V += 1\nx.y = 2") == [
        "proxy.batches (line 1)", "server.V (line 2)"]


def test_no_module_writes_proxy_or_server_state():
    root = Path(dprec.distributed.__file__).parent
    writes = {p.name: w for p in sorted(root.glob("*.py"))
              if (w := _outside_writes(p.read_text()))}
    assert writes == {}
