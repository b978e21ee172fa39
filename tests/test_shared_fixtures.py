"""shared_fixtures.py's table of tests that share a module's fixture names real tests, and its
scheduler's grouping follows it (a renamed test would silently lose its group)."""

import ast
from pathlib import Path

from shared_fixtures import ALL, SHARED, shared_group

ROOT = Path(__file__).parents[1]


def _test_functions(module: str) -> set[str]:
    tree = ast.parse((ROOT / module).read_text())
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef)
            and n.name.startswith("test_")}


def test_every_shared_entry_names_an_existing_module_and_its_tests():
    for module, tests in SHARED.items():
        assert (ROOT / module).is_file(), module
        assert set(tests) <= _test_functions(module), (module, set(tests) - _test_functions(module))


def test_the_listed_tests_share_their_modules_group_and_the_others_go_alone():
    module = "tests/services/test_processes.py"
    listed = SHARED[module][1]
    assert shared_group(f"{module}::{listed}[proxy]") == module
    assert shared_group(f"{module}::test_sigkill_and_restart_mid_round_lose_nothing") is None
    every = next(m for m, tests in SHARED.items() if tests == ALL)
    assert shared_group(f"{every}::test_anything[1-2]") == every
    assert shared_group("tests/test_golden.py::test_same_numbers[x]") is None
