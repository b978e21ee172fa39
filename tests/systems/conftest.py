"""Shared test helpers for systems: what an object can reach."""

import gc
import sys
from collections.abc import Callable

import pytest


def reachable_objects(root: object, limit: int = 300_000) -> list[object]:
    """Every object reachable from ``root`` through references (bounded walk; classes and
    modules are not followed)."""
    seen: dict[int, object] = {}
    todo = [root]
    while todo and len(seen) < limit:
        o = todo.pop()
        if id(o) in seen or isinstance(o, type | type(sys)):
            continue
        seen[id(o)] = o
        todo.extend(gc.get_referents(o))
    return list(seen.values())


@pytest.fixture
def reachable() -> Callable[[object], list[object]]:
    return reachable_objects
