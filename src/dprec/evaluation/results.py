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
import tempfile
import time
from pathlib import Path
from typing import Any

from dprec.errors import DprecError
from dprec.privacy.events import strict_json

__all__ = [
    "ResultsFolder", "check_output_base", "new_result_file", "strict_json_text", "write_json",
    "write_new_text",
]


def _safe(dataset: str) -> str:
    return "".join(c if c.isalnum() or c in "-_.+" else "_" for c in dataset)


def check_output_base(base: Path, option: str = "--out") -> Path:
    """Fail before any work if results cannot be written under ``base``: the folder is
    created and a file written and removed in it (``os.access`` is not enough: root passes
    it on /sys and on read-only mounts)."""
    base = Path(base)
    for parent in (base, *base.parents):
        if parent.exists():
            if not parent.is_dir():
                raise DprecError(f"{option} {base}: {parent} is a file, not a folder; "
                                 f"choose another {option}")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise DprecError(f"{option} {base}: cannot write in {parent}; choose another "
                                 f"{option}")
            break
    try:
        base.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".dprec-write-check-", dir=base)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise DprecError(f"{option} {base}: cannot write there ({e.strerror or e}); choose "
                         f"another {option}") from None
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


def strict_json_text(doc: object, indent: int | None = None) -> str:
    """``doc`` as strict JSON text: numpy numbers as floats, a non-finite float as the text
    "inf", "-inf" or "nan" (never a bare ``NaN`` token)."""
    plain = json.loads(json.dumps(doc, default=float))
    return json.dumps(strict_json(plain), indent=indent, allow_nan=False)


def write_json(path: Path, doc: object) -> Path:
    """Write ``doc`` to ``path`` atomically (temporary file, then rename), as strict JSON:
    a non-finite float is written as the text "inf", "-inf" or "nan", never a bare token."""
    text = strict_json_text(doc, indent=2)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    return path


def write_new_text(path: Path, text: str, *, overwrite: bool = False) -> Path:
    """Write ``text`` to ``path`` atomically and return where it went.

    The text goes to a unique temporary file beside ``path``, then into place in one step:
    ``os.replace`` with ``overwrite``, else a hard link, which fails if ``path`` exists by
    then (another run wrote it meanwhile): the text is then kept at the first free
    ``<stem>-<n><suffix>`` instead, so neither run's file is lost.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        if overwrite:
            os.replace(tmp, path)
            return path
        for i in range(10_000):
            target = path if i == 0 else path.with_name(f"{path.stem}-{i}{path.suffix}")
            try:
                _link_or_create(tmp, target, text)
                return target
            except FileExistsError:
                continue
        raise DprecError(f"could not find a free name beside {path}")
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _link_or_create(tmp: str, target: Path, text: str) -> None:
    """``target`` made from ``tmp`` only if it does not exist (FileExistsError otherwise):
    a hard link, or an exclusive create where the file system has no hard links."""
    try:
        os.link(tmp, target)
    except FileExistsError:
        raise
    except OSError:
        with open(target, "x", encoding="utf-8") as f:
            f.write(text)


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
