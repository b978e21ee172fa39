"""Where a result came from: the command that reproduces it, the UTC date, the commit and
the wall time. One helper for every experiment, benchmark and script that writes a result
(issue 32 §5).

    prov = Provenance.start("experiments/frontier.py", argv)
    ...
    doc = {**prov.to_json(), ...}          # command, date, commit, wall_s
    lines = [*prov.markdown_lines(), ...]  # "Command: `...`", "Date: ..., commit ..."
"""

from __future__ import annotations

import datetime
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["DATE_FORMAT", "PYTHON", "Provenance", "git_commit", "run_command", "utc_date"]

DATE_FORMAT = "%Y-%m-%d %H:%M UTC"
PYTHON = ".venv/bin/python"
"""The interpreter a recorded command names: the repository's virtual environment."""


def run_command(script: str | None = None, argv: Sequence[str] | None = None,
                prefix: Sequence[str] = (PYTHON,)) -> str:
    """The shell command that reruns this process: ``prefix``, the ``script`` (default:
    ``sys.argv[0]``, relative to the working directory where it lies below it) and its
    arguments (default: ``sys.argv[1:]``), quoted with :func:`shlex.join`."""
    if script is None:
        path = Path(sys.argv[0])
        try:
            script = str(path.resolve().relative_to(Path.cwd().resolve()))
        except ValueError:
            script = str(path)
    args = sys.argv[1:] if argv is None else list(argv)
    return shlex.join([*prefix, script, *args])


def utc_date(now: datetime.datetime | None = None) -> str:
    """``now`` (default: the current time) in UTC as :data:`DATE_FORMAT`."""
    moment = datetime.datetime.now(datetime.UTC) if now is None else now
    return moment.astimezone(datetime.UTC).strftime(DATE_FORMAT)


def git_commit(cwd: Path | str | None = None) -> str | None:
    """The short hash of ``HEAD`` in ``cwd`` (default: the working directory), or None
    outside a git checkout or without git."""
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=cwd,
                             capture_output=True, text=True, check=False)
    except OSError:
        return None
    return out.stdout.strip() or None


@dataclass
class Provenance:
    """The command, UTC date and commit of a run, and its start for the wall time."""

    command: str
    date: str
    commit: str | None
    started: float = field(default_factory=time.perf_counter, repr=False)

    @classmethod
    def start(cls, script: str | None = None, argv: Sequence[str] | None = None,
              prefix: Sequence[str] = (PYTHON,)) -> Provenance:
        """Provenance of this process, its clock started now (:func:`run_command`)."""
        return cls(run_command(script, argv, prefix), utc_date(), git_commit())

    def wall_s(self) -> float:
        """Seconds since :meth:`start`."""
        return time.perf_counter() - self.started

    def to_json(self) -> dict[str, object]:
        """``command``, ``date``, ``commit`` and ``wall_s`` (so far)."""
        return {"command": self.command, "date": self.date, "commit": self.commit,
                "wall_s": self.wall_s()}

    def markdown_lines(self) -> list[str]:
        """Two Markdown lines for a summary's head: the command, the date and the commit."""
        return [f"Command: `{self.command}`  ",
                f"Date: {self.date}, commit {self.commit or 'unknown'}"]
