"""A user's privacy ledger on the device: on disk, locked, atomically written, never over
budget, whatever number of processes share it.

The ledger holds the user's budget (epsilon, basic composition as
:class:`~dprec.privacy.ledger.PrivacyLedger`, with the same tolerance, so a device and the
simulation refuse the same spends) and one charge per key: the (pinned run, round) of a
message the device stored to send (:func:`dprec.client.runs.report_key`), never the server's
round number alone. A charge that would pass the budget raises
:class:`~dprec.privacy.ledger.BudgetExceededError` and changes nothing; a key charged before
is not charged again (the stored message re-sent, the same bytes, costs nothing more).

Several processes (two apps, two ``DeviceClient`` objects) may share one folder. Every read
and every charge holds an exclusive ``fcntl.flock`` on ``<ledger>.lock`` and re-reads the
file under it, so a charge is decided on what is on disk now, never on a copy loaded
earlier: two processes can never both spend the last of the budget (issue 31: without the
lock, 75 eps were sent on a budget of 60). :meth:`DiskLedger.locked` holds the lock over a
whole report (check, build, store, charge), so a process never builds a message on a
budget another one is spending.

Writes are atomic: a temporary file in the same folder, flushed and fsynced, then
``os.replace`` over the ledger and an fsync of the folder. A crash at any point leaves the
old ledger or the new one, never a torn one, and the device charges *before* it sends, so a
crash can only make the ledger over-count, never under-count. The folder is made mode 0700
and every file 0600: the ledger says which runs the user took part in.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dprec.errors import DprecError, check_positive
from dprec.privacy.ledger import BudgetExceededError, PrivacyLedger

__all__ = ["BudgetExceededError", "DiskLedger", "atomic_write", "private_dir"]

_FORMAT = 1
FILE_MODE = 0o600
DIR_MODE = 0o700


def private_dir(path: Path) -> Path:
    """``path`` made (with its parents) and set to mode 0700: only the user reads it."""
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, DIR_MODE)
    return path


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` (mode 0600) atomically and durably."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with open(fd, "wb") as f:
        os.fchmod(f.fileno(), FILE_MODE)
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class DiskLedger:
    """One user's spent epsilon, persisted in ``path`` (JSON), shared safely between
    processes (module docstring)."""

    def __init__(self, path: Path | str, budget: float) -> None:
        check_positive("budget", budget)
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self._limit = PrivacyLedger(budget, 1)
        self._charges: dict[str, float] = {}
        self._notes: dict[str, str] = {}
        self._lock_fd: int | None = None
        self._depth = 0
        private_dir(self.path.parent)
        with self.locked():
            if not self.path.exists():
                self._write()

    @contextlib.contextmanager
    def locked(self) -> Iterator[DiskLedger]:
        """Hold the ledger's exclusive lock (re-entrant in this object) with the charges
        re-read from disk: what is decided inside sees every other process's charges."""
        if self._depth == 0:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, FILE_MODE)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except BaseException:
                os.close(fd)
                raise
            self._lock_fd = fd
        self._depth += 1
        try:
            if self._depth == 1:
                self._reload()
            yield self
        finally:
            self._depth -= 1
            if self._depth == 0:
                fd, self._lock_fd = self._lock_fd, None
                assert fd is not None
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)

    def _reload(self) -> None:
        if self.path.exists():
            doc = self._read()
            if doc["budget"] != self.budget:
                raise DprecError(f"the ledger at {self.path} has budget {doc['budget']}, not "
                                 f"{self.budget}: a budget is fixed when the ledger is made")
            self._charges, self._notes = doc["charges"], doc["notes"]
        else:
            self._charges, self._notes = {}, {}
        self._limit.spent[0] = math.fsum(self._charges.values())

    def _read(self) -> dict[str, Any]:
        try:
            doc = json.loads(self.path.read_text())
            charges = {str(k): float(v) for k, v in doc["charges"].items()}
            notes = doc.get("notes", {})
            if doc.get("format") != _FORMAT or not all(
                    math.isfinite(v) and v >= 0 for v in charges.values()) \
                    or not all(isinstance(v, str) and k in charges for k, v in notes.items()):
                raise ValueError("unknown format, bad charge or bad note")
            return {"budget": float(doc["budget"]), "charges": charges, "notes": dict(notes)}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise DprecError(f"the ledger at {self.path} is unreadable ({e}); refusing to "
                             "guess what was spent") from None

    def _write(self) -> None:
        doc = {"format": _FORMAT, "budget": self.budget,
               "spent": math.fsum(self._charges.values()), "charges": self._charges,
               **({"notes": self._notes} if self._notes else {})}
        atomic_write(self.path, json.dumps(doc, indent=1, sort_keys=True).encode())

    @property
    def budget(self) -> float:
        return self._limit.budget_eps

    @property
    def spent(self) -> float:
        """Epsilon spent so far (the sum of the charges on disk now)."""
        with self.locked():
            return math.fsum(self._charges.values())

    @property
    def remaining(self) -> float:
        return self.budget - self.spent

    def charged(self, key: str) -> bool:
        """Is ``key`` charged on disk now?"""
        with self.locked():
            return key in self._charges

    def charged_under(self, prefix: str) -> bool:
        """Is any key starting with ``prefix`` (a run's, ``<run>/``) charged on disk now?"""
        with self.locked():
            return any(k.startswith(prefix) for k in self._charges)

    def count_under(self, prefix: str) -> int:
        """How many keys starting with ``prefix`` (a run's reports) are charged on disk now."""
        with self.locked():
            return sum(k.startswith(prefix) for k in self._charges)

    @property
    def notes(self) -> dict[str, str]:
        """What was recorded beside a charge (e.g. that its guarantee rests on a trusted
        aggregator), by key, as on disk now."""
        with self.locked():
            return dict(self._notes)

    def can_charge(self, eps: float) -> bool:
        """Would a new charge of ``eps`` stay within the budget (as the disk stands now)?"""
        with self.locked():
            return bool(self._limit.can_spend(0, eps)[0])

    def charge(self, key: str, eps: float, note: str | None = None) -> bool:
        """Charge ``eps`` under ``key`` (with ``note``, what the charge rests on) and persist
        it before returning, under the lock and on the charges re-read from disk; False if
        ``key`` was charged before (nothing changes). Raises :class:`BudgetExceededError`
        (nothing changes) if the budget would be passed."""
        if not (isinstance(eps, (int, float)) and math.isfinite(eps) or eps == math.inf) \
                or eps < 0:
            raise DprecError(f"eps must be a number >= 0, got {eps!r}")
        with self.locked():
            if key in self._charges:
                return False
            self._limit.spend(0, float(eps))  # raises, changing nothing, past the budget
            self._charges[key] = float(eps)
            if note is not None:
                self._notes[key] = str(note)
            try:
                self._write()
            except BaseException:
                del self._charges[key]
                self._notes.pop(key, None)
                raise
            finally:
                self._limit.spent[0] = math.fsum(self._charges.values())
        return True
