"""The import graph of dprec: layers only import downwards, no module imports itself back
through others, and every module states its public names in ``__all__``.

The layers (README.md, "Layout"), lowest first: the base modules (``errors``, ``random``,
``selection``), data, privacy (events, accountants, guarantees), mechanisms (each emits a
privacy event, so privacy's vocabulary lies below them), protocol, models, systems,
evaluation, audit, the report (reads results), then the deployment tier (client < services:
the simulation's HTTP transport plays the devices with the SDK; distributed), then the
command line, a package whose command groups share only its common modules. Every import
counts, those inside functions included: a lazy import still ties the two modules, and so
does a string constant that names a dprec module (what ``importlib.import_module`` is handed:
a registry of package strings is an import too).
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import dprec

ROOT = Path(dprec.__file__).parent

LAYERS: dict[str, float] = {
    "errors": 0, "random": 0, "selection": 0, "iteration": 0,
    "data": 1, "privacy": 2, "mechanisms": 3, "protocol": 4, "models": 5, "systems": 6,
    "evaluation": 7, "audit": 8, "report": 8.5,
    "client": 9, "services": 9.5, "distributed": 9,
    "cli": 10,
}
# Same tier, no import either way, except these (importer, imported).
PEERS_ALLOWED: set[tuple[str, str]] = set()

# Known cycles, each to be removed, never added to: the test fails on any other.
KNOWN_CYCLES: dict[str, frozenset[str]] = {}

# Inside the command line (dprec.cli): its face registers the command groups, which share
# only the lower modules common and tables and never import each other or the face.
CLI_LAYERS: dict[str, int] = {
    "common": 0, "demo": 1, "tables": 1,
    "audit": 2, "compare": 2, "data": 2, "privacy": 2, "report": 2, "run": 2, "serve": 2,
    "systems": 2, "tune": 2,
    "__init__": 3, "__main__": 4,
}


def modules(root: Path = ROOT, package: str = "dprec") -> dict[str, Path]:
    """Every module under ``root``, by dotted name (a package by its own name)."""
    found = {}
    for p in sorted(root.rglob("*.py")):
        parts = p.relative_to(root).with_suffix("").parts
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        found[".".join((package, *parts))] = p
    return found


def _runtime_nodes(tree: ast.AST):
    """Every node but those under ``if TYPE_CHECKING:`` (annotations only, never run)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))


def import_graph(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of ``mods`` it imports anywhere in its body but under ``if
    TYPE_CHECKING:``: the module named (``from a.b import c`` is ``a.b.c`` when that is a
    module, else ``a.b``)."""
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in _runtime_nodes(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                for a in node.names:
                    target = a.name
                    while target and target not in mods:
                        target = target.rpartition(".")[0]
                    if target:
                        edges.add(target)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    head = package.split(".")[: package.count(".") + 2 - node.level]
                    base = ".".join(head + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                for a in node.names:
                    if f"{base}.{a.name}" in mods:
                        edges.add(f"{base}.{a.name}")
                    elif base in mods:
                        edges.add(base)
        edges |= _named_modules(path, mods)
        edges.discard(name)
        graph[name] = edges
    return graph


def _named_modules(path: Path, mods: dict[str, Path]) -> set[str]:
    """The modules of ``mods`` that a string constant of ``path`` names exactly (outside
    docstrings and ``if TYPE_CHECKING:``) when ``path`` imports ``importlib``: an import by
    name. (A module name handed to a subprocess or a package-data loader is no import.)"""
    tree = ast.parse(path.read_text())
    if not any(a.name.split(".")[0] == "importlib" for n in _runtime_nodes(tree)
               if isinstance(n, ast.Import) for a in n.names) and not any(
            (n.module or "").split(".")[0] == "importlib" for n in _runtime_nodes(tree)
            if isinstance(n, ast.ImportFrom)):
        return set()
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef
                                | ast.AsyncFunctionDef)
                  and n.body and isinstance(n.body[0], ast.Expr)}
    return {n.value for n in _runtime_nodes(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in mods
            and id(n) not in docstrings}


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.add(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def layer(module: str) -> str | None:
    """The layer of ``dprec.x...``: ``x``; None for dprec."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def cli_layer(module: str) -> int:
    """The place of a module of dprec.cli in :data:`CLI_LAYERS` (the face is ``__init__``)."""
    return CLI_LAYERS[module.split(".")[2] if module.count(".") > 1 else "__init__"]


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for m, targets in graph.items():
        a = layer(m)
        for t in targets:
            b = layer(t)
            if a is None or b is None or a == b:
                continue
            if LAYERS[b] > LAYERS[a] or (LAYERS[b] == LAYERS[a] and (a, b) not in PEERS_ALLOWED):
                bad.append(f"{m} -> {t}")
    return sorted(bad)


def test_every_package_has_a_layer():
    assert {layer(m) for m in modules()} - {None} <= set(LAYERS)


def test_no_import_cycle_but_the_known_ones():
    found = set(cycles(import_graph(modules())))
    new = found - set(KNOWN_CYCLES.values())
    assert not new, f"new import cycles: {[sorted(c) for c in new]}"
    gone = set(KNOWN_CYCLES.values()) - found
    assert not gone, f"cycles broken, drop them from KNOWN_CYCLES: {[sorted(c) for c in gone]}"


def test_no_upward_import():
    assert upward_imports(import_graph(modules())) == []


def cli_imports_out_of_place(graph: dict[str, set[str]]) -> list[str]:
    """Imports inside dprec.cli that do not go strictly down :data:`CLI_LAYERS` (two
    command groups importing each other, or one importing the face, are out of place)."""
    return sorted(f"{m} -> {t}" for m, targets in graph.items() if layer(m) == "cli"
                  for t in targets if layer(t) == "cli" and cli_layer(t) >= cli_layer(m))


def test_the_command_line_is_a_package_of_command_groups_over_shared_modules():
    mods = {m for m in modules() if layer(m) == "cli"}
    assert {m.rpartition(".")[2] for m in mods - {"dprec.cli"}} == set(CLI_LAYERS) - {"__init__"}
    assert cli_imports_out_of_place(import_graph(modules())) == []
    probe = {"dprec.cli": {"dprec.cli.run"}, "dprec.cli.run": {"dprec.cli.common"},
             "dprec.cli.serve": {"dprec.cli.run", "dprec.cli.tables"},
             "dprec.cli.tables": {"dprec.cli"}}
    assert cli_imports_out_of_place(probe) == ["dprec.cli.serve -> dprec.cli.run",
                                               "dprec.cli.tables -> dprec.cli"]


def _probe(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    pkg = tmp_path / "dprec"
    for rel, text in {"__init__.py": "", **files}.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    return modules(pkg, "dprec")


def test_the_graph_sees_lazy_relative_and_from_imports(tmp_path):
    mods = _probe(tmp_path, {
        "data/__init__.py": "",
        "data/a.py": "def f():\n    from ..systems import b\n",
        "systems/__init__.py": "",
        "systems/b.py": "from . import c\n",
        "systems/c.py": "import dprec.data.a\n",
        "systems/d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                        "    from dprec.cli import x\nelse:\n    import dprec.data\n",
        "cli/__init__.py": "", "cli/serve.py": "from dprec.cli import x\n",
        "data/e.py": '"""Names dprec.systems.b."""\nimport importlib\n'
                     'PLUGINS = ("dprec.systems.c",)\n'
                     'def load():\n    return importlib.import_module("dprec.systems.b")\n',
    })
    graph = import_graph(mods)
    assert graph["dprec.data.e"] == {"dprec.systems.b", "dprec.systems.c"}
    del graph["dprec.data.e"]
    assert graph["dprec.data.a"] == {"dprec.systems.b"}
    assert graph["dprec.systems.b"] == {"dprec.systems.c"}
    assert graph["dprec.systems.d"] == {"dprec.data"}  # annotations only do not count
    assert cycles(graph) == [frozenset({"dprec.data.a", "dprec.systems.b", "dprec.systems.c"})]
    assert upward_imports(graph) == ["dprec.data.a -> dprec.systems.b"]
    assert (layer("dprec.client.http"), layer("dprec.cli.serve"), layer("dprec")) == (
        "client", "cli", None)
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [frozenset({"a", "b"})]


@pytest.mark.parametrize("name", sorted(modules()))
def test_every_module_states_its_public_names(name):
    tree = ast.parse(modules()[name].read_text())
    declared = [n for n in tree.body if isinstance(n, ast.Assign | ast.AnnAssign) and any(
        getattr(t, "id", None) == "__all__"
        for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))]
    assert declared, f"{name} has no __all__"
    if name.split(".")[-1] in {"ray_backend"}:  # needs the optional ray to import
        pytest.importorskip("ray")
    module = importlib.import_module(name)
    names = list(module.__all__)
    assert len(names) == len(set(names)), f"{name}.__all__ repeats a name"
    missing = [n for n in names if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names what it does not define: {missing}"
