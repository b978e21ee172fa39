"""A user's privacy ledger on the device: on disk, atomically written, never over budget.

The ledger holds the user's budget (epsilon, basic composition as
:class:`~dprec.privacy.ledger.PrivacyLedger`, with the same tolerance, so a device and the
simulation refuse the same spends) and one charge per key: the (pinned run, round) of a
message the device stored to send (:func:`dprec.client.runs.report_key`), never the server's
round number alone. A charge that would pass the budget raises
:class:`~dprec.privacy.ledger.BudgetExceededError` and changes nothing; a key charged before
is not charged again (the stored message re-sent, the same bytes, costs nothing more).

Writes are atomic: a temporary file in the same folder, flushed and fsynced, then
``os.replace`` over the ledger and an fsync of the folder. A crash at any point leaves the
old ledger or the new one, never a torn one, and the device charges *before* it sends, so a
crash can only make the ledger over-count, never under-count.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from dprec.errors import DprecError, check_positive
from dprec.privacy.ledger import BudgetExceededError, PrivacyLedger

__all__ = ["BudgetExceededError", "DiskLedger", "atomic_write"]

_FORMAT = 1


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
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
    """One user's spent epsilon, persisted in ``path`` (JSON)."""

    def __init__(self, path: Path | str, budget: float) -> None:
        check_positive("budget", budget)
        self.path = Path(path)
        self._limit = PrivacyLedger(budget, 1)
        if self.path.exists():
            doc = self._read()
            if doc["budget"] != float(budget):
                raise DprecError(f"the ledger at {self.path} has budget {doc['budget']}, not "
                                 f"{float(budget)}: a budget is fixed when the ledger is made")
            self._charges: dict[str, float] = doc["charges"]
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._charges = {}
            self._write()
        self._limit.spent[0] = self.spent

    def _read(self) -> dict[str, Any]:
        try:
            doc = json.loads(self.path.read_text())
            charges = {str(k): float(v) for k, v in doc["charges"].items()}
            if doc.get("format") != _FORMAT or not all(
                    math.isfinite(v) and v >= 0 for v in charges.values()):
                raise ValueError("unknown format or bad charge")
            return {"budget": float(doc["budget"]), "charges": charges}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise DprecError(f"the ledger at {self.path} is unreadable ({e}); refusing to "
                             "guess what was spent") from None

    def _write(self) -> None:
        doc = {"format": _FORMAT, "budget": self.budget, "spent": self.spent,
               "charges": self._charges}
        atomic_write(self.path, json.dumps(doc, indent=1, sort_keys=True).encode())

    @property
    def budget(self) -> float:
        return self._limit.budget_eps

    @property
    def spent(self) -> float:
        """Epsilon spent so far (the sum of the charges)."""
        return math.fsum(self._charges.values())

    @property
    def remaining(self) -> float:
        return self.budget - self.spent

    def charged(self, key: str) -> bool:
        return key in self._charges

    def can_charge(self, eps: float) -> bool:
        """Would a new charge of ``eps`` stay within the budget?"""
        return bool(self._limit.can_spend(0, eps)[0])

    def charge(self, key: str, eps: float) -> bool:
        """Charge ``eps`` under ``key`` and persist it before returning; False if ``key``
        was charged before (nothing changes). Raises :class:`BudgetExceededError` (nothing
        changes) if the budget would be passed."""
        if not (isinstance(eps, (int, float)) and math.isfinite(eps) or eps == math.inf) \
                or eps < 0:
            raise DprecError(f"eps must be a number >= 0, got {eps!r}")
        if key in self._charges:
            return False
        self._limit.spend(0, float(eps))  # raises, changing nothing, past the budget
        self._charges[key] = float(eps)
        try:
            self._write()
        except BaseException:
            del self._charges[key]
            raise
        finally:
            self._limit.spent[0] = self.spent
        return True
