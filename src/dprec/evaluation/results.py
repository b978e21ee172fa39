"""Result files that are never overwritten, never half-written and never lost.

- Every run gets a new path: ``<base>/<dataset>/<what>-<time>[-<n>]``, reserved atomically
  (exclusive create), so two runs finishing in the same second both keep their results.
- A file is written to a temporary name beside it and renamed into place.
- A comparison is built in a hidden ``.<name>.partial`` folder: each system's result is saved
  as soon as it finishes, with ``status.json`` saying what is done. On success the folder is
  renamed to its final name with ``status.json`` {"complete": true}; if the run stops early
  it is renamed ``<name>-incomplete`` with what finished and why it stopped.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from dprec.errors import DprecError


def _safe(dataset: str) -> str:
    return "".join(c if c.isalnum() or c in "-_.+" else "_" for c in dataset)


def check_output_base(base: Path) -> Path:
    """Fail before any work if results cannot be written under ``base``."""
    base = Path(base)
    for parent in (base, *base.parents):
        if parent.exists():
            if not parent.is_dir():
                raise DprecError(f"--out {base}: {parent} is a file, not a folder; "
                                 "choose another --out")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise DprecError(f"--out {base}: cannot write in {parent}; choose another --out")
            break
    return base


def _reserve(parent: Path, stem: str, suffix: str, make: Any) -> Path:
    parent.mkdir(parents=True, exist_ok=True)
    for i in range(10_000):
        path = parent / f"{stem}{'' if i == 0 else f'-{i}'}{suffix}"
        try:
            make(path)
            return path
        except FileExistsError:
            continue
    raise DprecError(f"could not reserve a new results path under {parent}")


def new_result_file(base: Path, dataset: str, what: str) -> Path:
    """A new, empty ``.json`` path reserved for one run."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return _reserve(Path(base) / _safe(dataset), f"{what}-{stamp}", ".json",
                    lambda p: p.touch(exist_ok=False))


def write_json(path: Path, doc: object) -> Path:
    """Write ``doc`` to ``path`` atomically (temporary file, then rename)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(doc, indent=2, default=float))
    os.replace(tmp, path)
    return path


class ResultsFolder:
    """A comparison's folder: built hidden, saved system by system, renamed when done."""

    def __init__(self, base: Path, dataset: str, what: str) -> None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        parent = Path(base) / _safe(dataset)

        def make(path: Path) -> None:
            final = path.with_name(path.name.removeprefix(".").removesuffix(".partial"))
            if final.exists() or Path(f"{final}-incomplete").exists():
                raise FileExistsError(final)
            path.mkdir()

        self.work = _reserve(parent, f".{what}-{stamp}", ".partial", make)
        self.final = self.work.with_name(self.work.name.removeprefix(".")
                                         .removesuffix(".partial"))
        self.finished: list[str] = []
        self.failed: dict[str, str] = {}
        (self.work / "systems").mkdir()
        self._status(complete=False)

    @property
    def path(self) -> Path:
        """Where files go while the run is in progress."""
        return self.work

    def _status(self, complete: bool, stopped: str | None = None) -> None:
        write_json(self.work / "status.json", {
            "complete": complete, "finished": self.finished, "failed": self.failed,
            **({"stopped": stopped} if stopped else {}),
        })

    def save_system(self, name: str, doc: dict[str, Any]) -> Path:
        """Save one system's result as soon as it finishes."""
        path = write_json(self.work / "systems" / f"{_safe(name)}.json", doc)
        self.finished.append(name)
        self._status(complete=False)
        return path

    def record_failure(self, name: str, error: str) -> None:
        self.failed[name] = error
        self._status(complete=False)

    def complete(self) -> Path:
        """Mark complete and move into place (one rename)."""
        self._status(complete=not self.failed)
        os.rename(self.work, self.final)
        return self.final

    def abandon(self, reason: str) -> Path:
        """Keep what finished under ``<name>-incomplete``."""
        self._status(complete=False, stopped=reason)
        target = Path(f"{self.final}-incomplete")
        os.rename(self.work, target)
        return target
