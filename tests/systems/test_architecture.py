"""Clients and servers stay apart (docs/architecture.md, roles), checked on the import graph and
on the objects themselves."""

import ast
import functools
import importlib.util
import sys
from importlib.machinery import ModuleSpec
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import dprec

ROOT = Path(dprec.__file__).parent


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    return ".".join(rel.parts)


def _direct_imports(name: str, prefix: str = "dprec") -> set[str]:
    """Modules imported by ``name``: absolute, relative and ``from x import module`` forms."""
    spec: ModuleSpec | None = importlib.util.find_spec(name)
    assert spec is not None and spec.origin
    tree = ast.parse(Path(spec.origin).read_text())
    package = name if spec.origin.endswith("__init__.py") else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = importlib.util.resolve_name("." * node.level + (node.module or ""), package) \
                if node.level else node.module or ""
            found.add(base)
            for a in node.names:
                full = f"{base}.{a.name}"
                if importlib.util.find_spec(base) and _is_module(full):
                    found.add(full)
    return {m for m in found if m.split(".")[0] == prefix}


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, AttributeError, ValueError):
        return False


def _closure(name: str, prefix: str = "dprec") -> set[str]:
    """Every module of ``prefix`` that ``name`` imports, transitively (with packages)."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        parts = m.split(".")
        todo.extend(".".join(parts[:i]) for i in range(2, len(parts)) if _is_module(
            ".".join(parts[:i])))
        todo.extend(_direct_imports(m, prefix) - seen)
    return seen


# Modules that play several roles in one process by design (simulation, audit), so may
# reach clients and servers; no role may reach them.
DRIVERS = {
    "dprec.protocol.engine": "the round loop and its in-process proxies",
    "dprec.services.transport": "the engine's HTTP transport: stands in for server and proxy",
    "dprec.audit.one_run": "runs canary clients against a system's server",
}
DRIVER_PACKAGES = ("dprec.distributed",)  # shards run clients and fold the server's sums
ROLE_BASES = {"client": {"Clients"}, "server": {"Server"}, "proxy": {"Proxy"}}
ROLE_MODULES = {"client": {"dprec.client"}, "server": {"dprec.services.roles"},
                "proxy": {"dprec.services.proxy"}}


def _defines_subclass(path: Path, bases: set[str]) -> bool:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ClassDef) and any(
                (getattr(b, "id", None) or getattr(b, "attr", None)) in bases
                for b in node.bases):
            return True
    return False


def _is_driver(name: str) -> bool:
    return name in DRIVERS or name.startswith(DRIVER_PACKAGES)


def _roles(role: str, root: Path = ROOT) -> list[str]:
    """The modules of ``role`` wherever they live: named ``role.py``, in the role's package
    (``dprec.client``: the device SDK), listed in ROLE_MODULES, or defining a subclass of the
    engine's role class (``Clients``, ``Server``, ``Proxy``); drivers excepted."""
    found = set()
    for p in root.rglob("*.py"):
        name = _module_name(p) if root == ROOT else ".".join(
            (root.name, *p.relative_to(root).with_suffix("").parts))
        name = name.removesuffix(".__init__")
        if _is_driver(name):
            continue
        if p.stem == role or _defines_subclass(p, ROLE_BASES[role]) or any(
                name == m or name.startswith(m + ".") for m in ROLE_MODULES[role]):
            found.add(name)
    return sorted(found)


def _role_of(module: str) -> set[str]:
    return {r for r in ROLE_BASES if module in _found_roles()[r]}


@functools.cache
def _found_roles() -> dict[str, set[str]]:
    """Every role's modules, parsed once at first use (not while pytest collects)."""
    return {r: set(_roles(r)) for r in ROLE_BASES}


def test_roles_are_found_wherever_their_files_live():
    assert {"dprec.client.device", "dprec.client.http", "dprec.systems.fmf.client",
            "dprec.protocol.poisoning"} <= _found_roles()["client"]
    assert {"dprec.services.server", "dprec.services.roles", "dprec.systems.fmf.server",
            "dprec.systems.privrec.server"} <= _found_roles()["server"]
    assert "dprec.services.proxy" in _found_roles()["proxy"]
    assert not any(_role_of(m) for m in DRIVERS)


def test_the_role_finder_sees_a_role_class_in_any_file(tmp_path):
    pkg = tmp_path / "probe"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text("from dprec.protocol.engine import Clients\n"
                                    "class Devices(Clients):\n    pass\n")
    (pkg / "other.py").write_text("class Plain:\n    pass\n")
    assert _roles("client", pkg) == ["probe.helpers"]


@pytest.mark.slow  # the import graph of every role module
def test_roles_do_not_import_each_other_even_transitively():
    """A client reaches no server, proxy, driver or service; a server no client, proxy or
    driver; the proxy (which sees opaque messages) no client, server or driver."""
    assert all(_found_roles().values())
    for role, members in _found_roles().items():
        for m in members:
            reached = _closure(m) - {m}
            bad = {x for x in reached if _is_driver(x) and x != "dprec.protocol.engine"}
            bad |= {x for x in reached if _role_of(x) - {role}}
            if role == "client":
                bad |= {x for x in reached if x.startswith("dprec.services")}
            assert not bad, f"{role} {m} reaches {sorted(bad)}"


def test_shards_never_reach_the_services_or_the_device_sdk():
    for p in (ROOT / "distributed").glob("*.py"):
        name = _module_name(p).removesuffix(".__init__")
        bad = {x for x in _closure(name) if x.startswith(("dprec.services", "dprec.client"))}
        assert not bad, f"{name} reaches {sorted(bad)}"


def test_the_closure_check_sees_relative_and_transitive_imports(tmp_path, monkeypatch):
    pkg = tmp_path / "dprec_probe"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "server.py").write_text("from . import helper\n")
    (pkg / "helper.py").write_text("from dprec_probe.client import x\n")
    (pkg / "client.py").write_text("x = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert "dprec_probe.client" in _closure("dprec_probe.server", prefix="dprec_probe")
        assert "dprec_probe.server" not in _closure("dprec_probe.client", prefix="dprec_probe")
    finally:
        for m in [m for m in sys.modules if m.startswith("dprec_probe")]:
            sys.modules.pop(m)


def _server_of(system_name: str, train: sp.csr_matrix):
    """Run a system's protocol and keep its server object (captured at construction)."""
    import dprec.protocol.engine as engine
    captured = []
    original = engine.run_protocol

    def spy(server, clients, *a, **k):
        captured.append(server)
        return original(server, clients, *a, **k)

    from dprec.systems.registry import make_system
    system = make_system(system_name, {"epochs": 2} if "fmf" in system_name
                         or system_name == "fcf" else {})  # loads its modules (lazily registered)
    engine_users = [m for m in list(sys.modules.values())
                    if getattr(m, "run_protocol", None) is original]
    for m in engine_users:
        m.run_protocol = spy
    try:
        system.fit(train, np.random.default_rng(0))
    finally:
        for m in engine_users:
            m.run_protocol = original
    assert captured, f"{system_name} did not run the engine"
    return captured[0]


def test_servers_cannot_reach_raw_histories(reachable):
    from dprec.data.synthetic import synthetic
    train = synthetic(200, 80, 4_000, rng=0).binary()
    for name in ("dplcf-sp", "lcf-ub", "fmf-ldp", "fcf"):
        server = _server_of(name, train)
        held = {id(train), id(train.data), id(train.indices), id(train.indptr)}
        reach = reachable(server)
        assert not held & {id(o) for o in reach}, f"{name}'s server reaches the history"
        assert not any(isinstance(o, sp.spmatrix | sp.sparray) for o in reach), name


def test_the_reachability_check_finds_a_planted_history(reachable):
    train = sp.random(5, 5, density=0.5, format="csr", random_state=0)

    class Leaky:
        def __init__(self, h):
            self.cache = {"x": [h]}

    assert id(train) in {id(o) for o in reachable(Leaky(train))}
