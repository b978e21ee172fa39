"""Every system is registered one way: a ``SPECS`` list in its module (or its package's
``specs.py``), that module one line of ``registry.SPEC_MODULES``; the registry holds no entry
of its own and builds nothing itself."""

import ast
import importlib
from pathlib import Path

import pytest

import dprec.systems
from dprec.errors import DprecError
from dprec.systems import registry
from dprec.systems.registry import SPEC_MODULES, SYSTEMS
from dprec.systems.spec import SystemSpec

SYSTEMS_DIR = Path(dprec.systems.__file__).parent

NAMES = [
    "random", "popularity", "ease", "item-knn", "lcf-ub", "lcf-sp", "lcf-ap", "dplcf-sp",
    "dplcf-ap", "dplcf-oue", "dplcf-eb", "bpr-mf", "gmf", "mf-np", "fcf", "fmf-ldp",
    "global-mean", "bias",
    "nondp-svd", "pcc-knn", "cos-knn", "laplace-svd", "laplace-rr-svd", "ldp-svd", "dpsgd-mf",
    "dpps-mf", "pnbm", "dpsgd-pnbm", "dpps-pnbm", "privrec", "dp-privrec", "privrec-cen",
    "fofl-self", "nn-self", "dp-pop", "ldp-pop", "dpals", "dp-fedavg",
]
"""The registered systems, in the order ``dprec systems`` lists them."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(SYSTEMS_DIR).with_suffix("").parts
    return ".".join(("dprec.systems", *parts))


def _defines_specs(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.AnnAssign | ast.Assign) and any(
        getattr(t, "id", None) == "SPECS"
        for t in (n.targets if isinstance(n, ast.Assign) else [n.target])) for n in tree.body)


def _builds_specs(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.Call) and getattr(n.func, "id", None) == "SystemSpec"
               for n in ast.walk(tree))


def test_the_registered_systems_and_their_order_are_unchanged():
    assert list(SYSTEMS) == NAMES


def test_the_registry_is_exactly_the_specs_of_its_modules_in_order():
    specs = [s for m in SPEC_MODULES for s in importlib.import_module(m).SPECS]
    assert all(isinstance(s, SystemSpec) for s in specs)
    assert [(s.name, s) for s in specs] == list(SYSTEMS.items())


def test_systems_are_built_only_in_modules_that_the_registry_lists():
    defining, building = set(), set()
    for path in sorted(SYSTEMS_DIR.rglob("*.py")):
        tree = ast.parse(path.read_text())
        if _defines_specs(tree):
            defining.add(_module_name(path))
        if _builds_specs(tree):
            building.add(_module_name(path))
    assert defining == set(SPEC_MODULES), "a SPECS list the registry does not read, or back"
    assert building <= set(SPEC_MODULES), "SystemSpec(...) outside a registered SPECS module"
    assert "dprec.systems.registry" not in building


def test_a_name_registered_twice_is_refused(monkeypatch):
    monkeypatch.setattr(registry, "SPEC_MODULES", ("dprec.systems.baselines",) * 2)
    with pytest.raises(DprecError, match="registered twice: ease, item-knn, popularity, random"):
        registry._specs.__wrapped__()  # the uncached load
