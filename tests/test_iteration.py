"""One iteration loop and one hook name: ``on_iteration(t, state)``, an IterationHook."""

import inspect
import re
from pathlib import Path

import pytest

import dprec
from dprec.iteration import iterations
from dprec.systems.registry import SYSTEMS, make_system

SRC = Path(dprec.__file__).parent
OLD_NAMES = re.compile(r"\b(on_round|on_epoch|RoundHook)\b")


def test_no_old_hook_name_comes_back():
    found = [f"{p.relative_to(SRC)}:{i}: {line.strip()}"
             for p in sorted(SRC.rglob("*.py"))
             for i, line in enumerate(p.read_text().splitlines(), 1)
             if OLD_NAMES.search(line)]
    assert found == [], "one hook name (on_iteration: IterationHook), found old ones"


def test_the_hook_type_is_defined_once():
    defined = [str(p.relative_to(SRC)) for p in sorted(SRC.rglob("*.py"))
               if re.search(r"^(class IterationHook\b|IterationHook\s*=)", p.read_text(), re.M)]
    assert defined == ["iteration.py"]


@pytest.mark.parametrize("name", sorted(SYSTEMS))
def test_every_system_fit_takes_on_iteration(name):
    params = inspect.signature(type(make_system(name, {})).fit).parameters
    assert "on_iteration" in params
    assert params["on_iteration"].default is None


def test_the_hook_runs_after_each_body_with_the_state():
    calls: list[tuple[str, int, object]] = []
    state = object()
    for t in iterations(3, lambda t, s: calls.append(("hook", t, s)), state):
        calls.append(("body", t, None))
    assert calls == [("body", 0, None), ("hook", 0, state), ("body", 1, None),
                     ("hook", 1, state), ("body", 2, None), ("hook", 2, state)]


def test_a_body_that_leaves_the_loop_calls_no_hook():
    seen: list[int] = []
    for t in iterations(5, lambda t, s: seen.append(t)):
        if t == 2:
            break
    assert seen == [0, 1]
    assert list(iterations(0, lambda t, s: seen.append(t))) == []
    assert list(iterations(2, progress="test")) == [0, 1]
