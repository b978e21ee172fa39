"""README's lists that come from the registry (issue 32 §7): the systems that run as
services, those with a sharded backend, and the backends. Each sits between
``<!-- registry:NAME -->`` and ``<!-- /registry:NAME -->`` in README.md.

    python scripts/readme_lists.py           # rewrite the lists in README.md
    python scripts/readme_lists.py --check   # exit 1 where README.md disagrees

``tests/test_readme_lists.py`` runs the check.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def sections() -> dict[str, str]:
    """Each generated list's text, by its marker's name."""
    from dprec.distributed import BACKENDS
    from dprec.systems.deployable import deployable_systems, sharded_systems

    return {
        "deployable": "Deployable today (from the registry, "
                      "`dprec.systems.deployable.deployable_systems`): "
                      + ", ".join(deployable_systems()) + ".",
        "sharded": "With a sharded backend (their server half names a shard adapter): "
                   + ", ".join(sharded_systems()) + ".",
        "backends": "Backends (`--backend`): "
                    + "; ".join(f"`{k}`, {v}" for k, v in BACKENDS.items()) + ".",
    }


def render(text: str) -> str:
    """``text`` with every marked list replaced by its generated text; a marker pair
    missing from ``text`` is an error."""
    for name, body in sections().items():
        start, end = f"<!-- registry:{name} -->", f"<!-- /registry:{name} -->"
        pattern = re.compile(rf"({start}\n)(?:.*?\n)?({end})", re.S)
        if not pattern.search(text):
            raise SystemExit(f"README.md has no <!-- registry:{name} --> section")
        text = pattern.sub(lambda m, b=body: m.group(1) + b + "\n" + m.group(2), text)
    return text


def main(argv: list[str]) -> int:
    text = README.read_text()
    new = render(text)
    if "--check" in argv:
        if new != text:
            print("README.md's registry lists are stale: run python scripts/readme_lists.py")
            return 1
        return 0
    README.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
