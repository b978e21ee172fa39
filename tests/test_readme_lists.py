"""README's lists of systems, deployable systems, sharded systems and backends agree with
the registry (issue 32 §7): the generated ones are what ``scripts/readme_lists.py`` writes,
and the Systems table names every registered system once."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from dprec.systems.registry import SYSTEMS

ROOT = Path(__file__).parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("readme_lists", ROOT / "scripts" /
                                                  "readme_lists.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generated_lists_are_what_the_registry_says():
    text = (ROOT / "README.md").read_text()
    assert _script().render(text) == text, "run python scripts/readme_lists.py"


def test_a_stale_list_is_seen():
    script = _script()
    text = (ROOT / "README.md").read_text()
    stale = text.replace(", dp-fedavg.", ".", 1)
    assert stale != text and script.render(stale) == text
    with pytest.raises(SystemExit, match="no <!-- registry:sharded"):
        script.render(text.replace("<!-- registry:sharded -->", ""))


def _systems_table(text: str) -> list[str]:
    section = text.split("## Systems\n", 1)[1].split("\n## ", 1)[0]
    names = []
    for line in section.splitlines():
        cells = line.split("|")
        if len(cells) > 2 and not re.fullmatch(r"\s*(name|-+)\s*", cells[1]):
            names += [n.strip() for n in cells[1].split(",")]
    return names


def test_the_systems_table_names_every_registered_system_once():
    names = _systems_table((ROOT / "README.md").read_text())
    assert sorted(names) == sorted(SYSTEMS), set(names) ^ set(SYSTEMS)
