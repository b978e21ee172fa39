"""Privacy events: what a mechanism did, recorded apart from what it cost.

Mechanisms emit small frozen event records, after dp-accounting's ``dp_event.py``
(google/differential-privacy): dp-accounting's own types where they exist
(``GaussianDpEvent``, ``LaplaceDpEvent``, ``RandomizedResponseDpEvent``, ``NoOpDpEvent``,
``NonPrivateDpEvent``, ...), and the three below where they do not. An event's meaning never
changes once published; an accountant (:mod:`dprec.privacy.accountant`) turns a log of events
into epsilons and never looks inside a mechanism.

:class:`EventLog` records what actually happened in a run: in which round which users
underwent how many copies of which event, and whether each copy reads one interaction or
all of the user's data. It keeps one per-user count vector per distinct (event, unit)
pair, so recording is vectorised over users.
"""

from __future__ import annotations

import math
from typing import Literal, get_args

import attr
import dp_accounting
import numpy as np
from numpy.typing import ArrayLike

from dprec.errors import DprecError

__all__ = [
    "BitFlipDpEvent",
    "EventLog",
    "LocalReportDpEvent",
    "ShuffledReportDpEvent",
    "Unit",
    "describe_event",
    "event_to_json",
    "strict_json",
]

Unit = Literal["interaction", "user"]
_UNITS: tuple[str, ...] = get_args(Unit)


def _check_prob(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise DprecError(f"{name} must be in [0, 1], got {value}")


@attr.s(frozen=True, slots=True, auto_attribs=True)
class BitFlipDpEvent(dp_accounting.DpEvent):
    """One bit reported 1 with probability ``p`` if the true bit is 1, ``q`` if it is 0
    (DPLCF, Gao et al. SIGIR 2020, Eq. 3), ``0 <= q < p <= 1``.

    Symmetric flipping has ``p = 1 - q``, DPLCF's asymmetric variant ``p = 1`` (presence
    protected only), optimised unary encoding ``p = 1/2, q = 1/(e^eps + 1)``. The copies a
    user undergoes are bits of one fixed vector flipped independently (non-adaptively), which
    the accountant may analyse as a whole vector.
    """

    p: float
    q: float

    def __attrs_post_init__(self) -> None:
        _check_prob("p", self.p)
        _check_prob("q", self.q)
        if not self.q < self.p:
            raise DprecError(f"BitFlipDpEvent needs q < p, got p={self.p}, q={self.q}")


@attr.s(frozen=True, slots=True, auto_attribs=True)
class LocalReportDpEvent(dp_accounting.DpEvent):
    """One pure ``epsilon``-LDP report of a user's data (e.g. the binary or piecewise
    mechanism on a value in [-1, 1]; Duchi et al. 2018, Wang et al. ICDE 2019)."""

    epsilon: float

    def __attrs_post_init__(self) -> None:
        if not (self.epsilon > 0 and math.isfinite(self.epsilon)):
            raise DprecError(f"epsilon must be finite and > 0, got {self.epsilon}")


@attr.s(frozen=True, slots=True, auto_attribs=True)
class ShuffledReportDpEvent(dp_accounting.DpEvent):
    """A user's single ``epsilon0``-LDP report shuffled by a trusted proxy together with
    ``n - 1`` other users' reports, one per user (Feldman, McMillan, Talwar, FOCS 2021)."""

    epsilon0: float
    n: int

    def __attrs_post_init__(self) -> None:
        if not (self.epsilon0 > 0 and math.isfinite(self.epsilon0)):
            raise DprecError(f"epsilon0 must be finite and > 0, got {self.epsilon0}")
        if isinstance(self.n, bool) or int(self.n) != self.n or self.n < 1:
            raise DprecError(f"n must be an integer >= 1, got {self.n!r}")


def strict_json(value: object) -> object:
    """Non-finite floats as "inf" / "-inf" / "nan" text, recursively (strict JSON)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: strict_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [strict_json(v) for v in value]
    return value


def event_to_json(event: dp_accounting.DpEvent) -> dict[str, object]:
    """``{"type": class name, **fields}`` (nested events as dicts, inf as "inf")."""
    fields = attr.asdict(event, recurse=True) if attr.has(type(event)) else {}
    return {"type": type(event).__name__, **strict_json(fields)}  # type: ignore[dict-item]


def describe_event(event: dp_accounting.DpEvent) -> str:
    """Short text, e.g. ``BitFlipDpEvent(p=0.731059, q=0.268941)``."""

    def fmt(value: object) -> str:
        if isinstance(value, dp_accounting.DpEvent):
            return describe_event(value)
        if isinstance(value, float):
            return f"{value:.6g}"
        if isinstance(value, list | tuple):
            return "[" + ", ".join(fmt(v) for v in value) + "]"
        return repr(value)

    if not attr.has(type(event)):
        return type(event).__name__
    args = ", ".join(f"{f.name}={fmt(getattr(event, f.name))}" for f in attr.fields(type(event)))
    return f"{type(event).__name__}({args})"


class _Tally:
    """Per-user counts of one (event, unit): copies undergone, and records appeared in."""

    __slots__ = ("copies", "records", "n_records")

    def __init__(self, size: int) -> None:
        self.copies = np.zeros(size, dtype=np.int64)
        self.records = np.zeros(size, dtype=np.int64)
        self.n_records = 0

    def grow(self, size: int) -> None:
        for name in ("copies", "records"):
            old = getattr(self, name)
            new = np.zeros(size, dtype=np.int64)
            new[: old.size] = old
            setattr(self, name, new)


class EventLog:
    """What happened in a run: per round, which users underwent which events.

    ``record(round, event, users, count, unit)``: every listed user underwent ``count``
    copies of ``event`` in ``round`` (a user listed twice counts twice). ``unit``:

    - ``"interaction"``: each copy reads one interaction of the user, and the ``count``
      copies of one record read different interactions (DPLCF: bit ``i`` of the N-bit
      vector is item ``i``), so one interaction is touched by one copy per record.
    - ``"user"``: each copy may read all of the user's data (FMF-LDP: every gradient report
      depends on the whole profile).

    Storage is one int64 count vector per distinct (event, unit) pair plus one packed
    participation bit mask per round; ``n_users`` grows with the largest user id seen.
    """

    def __init__(self, n_users: int = 0) -> None:
        if isinstance(n_users, bool) or int(n_users) != n_users or n_users < 0:
            raise DprecError(f"n_users must be an integer >= 0, got {n_users!r}")
        self._n = int(n_users)
        self._capacity = self._n
        self._tallies: dict[tuple[dp_accounting.DpEvent, str], _Tally] = {}
        self._masks: dict[int, np.ndarray] = {}  # packed participation bits per round
        self._open: tuple[int, np.ndarray] | None = None  # last round touched, unpacked
        self._n_records = 0

    # -- recording -------------------------------------------------------------------------

    def _users(self, users: ArrayLike) -> np.ndarray:
        u = np.asarray(users)
        if u.size and not np.issubdtype(u.dtype, np.integer):
            raise DprecError(f"users must be integer ids, got dtype {u.dtype}")
        u = u.astype(np.int64, copy=False).ravel()
        if u.size and int(u.min()) < 0:
            raise DprecError(f"users must be >= 0, got {int(u.min())}")
        return u

    def _grow(self, size: int) -> None:
        if size <= self._n:
            return
        if size > self._capacity:
            self._capacity = max(size, 2 * self._capacity)
            for tally in self._tallies.values():
                tally.grow(self._capacity)
            if self._open is not None:
                r, mask = self._open
                self._open = (r, np.concatenate([mask, np.zeros(self._capacity - mask.size, bool)]))
        self._n = size

    def _open_round(self, r: int) -> np.ndarray:
        """The unpacked participation mask of round ``r`` (packing the previous one)."""
        if self._open is not None and self._open[0] == r:
            return self._open[1]
        if self._open is not None:
            self._masks[self._open[0]] = np.packbits(self._open[1])
        mask = np.zeros(self._capacity, dtype=bool)
        old = self._masks.get(r)
        if old is not None:
            bits = np.unpackbits(old, count=min(8 * old.size, self._capacity))
            mask[: bits.size] = bits
        self._masks[r] = old if old is not None else np.packbits(mask)
        self._open = (r, mask)
        return mask

    def _round_mask(self, r: int) -> np.ndarray | None:
        if self._open is not None and self._open[0] == r:
            return self._open[1][: self._n]
        packed = self._masks.get(r)
        if packed is None:
            return None
        bits = np.unpackbits(packed, count=min(8 * packed.size, self._n)).astype(bool)
        return np.concatenate([bits, np.zeros(self._n - bits.size, bool)])

    def record(
        self,
        round: int,
        event: dp_accounting.DpEvent,
        users: ArrayLike,
        count: int = 1,
        unit: Unit = "user",
    ) -> None:
        """Every user in ``users`` underwent ``count`` copies of ``event`` in ``round``."""
        if isinstance(round, bool) or int(round) != round or round < 0:
            raise DprecError(f"round must be an integer >= 0, got {round!r}")
        if not isinstance(event, dp_accounting.DpEvent):
            raise DprecError(f"event must be a dp_accounting.DpEvent, got {type(event).__name__}")
        if isinstance(count, bool) or int(count) != count or count < 1:
            raise DprecError(f"count must be an integer >= 1, got {count!r}")
        if unit not in _UNITS:
            raise DprecError(f"unit must be one of {_UNITS}, got {unit!r}")
        try:
            hash(event)
        except TypeError:
            raise DprecError(
                f"event must be hashable (record the parts of a composed event separately), "
                f"got {event!r}"
            ) from None
        u = self._users(users)
        r = int(round)
        if u.size:
            self._grow(int(u.max()) + 1)
        key = (event, unit)
        tally = self._tallies.get(key)
        if tally is None:
            tally = self._tallies[key] = _Tally(self._capacity)
        hits = np.bincount(u, minlength=self._capacity)
        tally.copies += hits if count == 1 else hits * int(count)
        tally.records += hits
        tally.n_records += 1
        mask = self._open_round(r)
        np.logical_or(mask, hits > 0, out=mask)
        self._n_records += 1

    # -- reading ---------------------------------------------------------------------------

    @property
    def n_users(self) -> int:
        """Number of user ids covered (largest id seen + 1, or the constructor's value)."""
        return self._n

    @property
    def rounds(self) -> frozenset[int]:
        """The rounds in which something was recorded."""
        return frozenset(self._masks)

    def __len__(self) -> int:
        """Number of records."""
        return self._n_records

    def keys(self) -> list[tuple[dp_accounting.DpEvent, Unit]]:
        """The distinct (event, unit) pairs, in first-recorded order."""
        return list(self._tallies)  # type: ignore[arg-type]

    def participants(self, round: int) -> np.ndarray:
        """Sorted ids of the users with at least one record in ``round`` (empty if none)."""
        mask = self._round_mask(int(round))
        if mask is None:
            return np.zeros(0, dtype=np.int64)
        return np.flatnonzero(mask).astype(np.int64)

    def counts(
        self,
        event: dp_accounting.DpEvent,
        unit: Unit = "user",
        level: Literal["user", "event"] = "user",
    ) -> np.ndarray:
        """Per-user number of copies of ``(event, unit)`` that count at ``level``.

        ``level="user"``: every copy. ``level="event"`` (one interaction): every copy for
        ``unit="user"``, one copy per record for ``unit="interaction"``.
        """
        if level not in ("user", "event"):
            raise DprecError(f"level must be 'user' or 'event', got {level!r}")
        tally = self._tallies.get((event, unit))
        if tally is None:
            return np.zeros(self._n, dtype=np.int64)
        use = tally.records if (level == "event" and unit == "interaction") else tally.copies
        return use[: self._n].copy()

    def count_matrix(
        self, level: Literal["user", "event"] = "user"
    ) -> tuple[list[tuple[dp_accounting.DpEvent, Unit]], np.ndarray]:
        """``(keys, M)`` with ``M[u, j]`` = :meth:`counts` of ``keys[j]`` for user ``u``."""
        keys = self.keys()
        if not keys:
            return keys, np.zeros((self._n, 0), dtype=np.int64)
        cols = [self.counts(e, unit, level) for e, unit in keys]
        return keys, np.stack(cols, axis=1)

    def to_json(self) -> dict[str, object]:
        """Summary: rounds, events with counts, participants per round (no user lists)."""
        events = []
        for (event, unit), tally in self._tallies.items():
            copies = tally.copies[: self._n]
            events.append(
                {
                    "event": event_to_json(event),
                    "unit": unit,
                    "records": tally.n_records,
                    "copies": int(copies.sum()),
                    "users": int(np.count_nonzero(copies)),
                    "max_copies_per_user": int(copies.max()) if copies.size else 0,
                }
            )
        participants = {
            str(r): int(np.count_nonzero(self._round_mask(r))) for r in sorted(self._masks)
        }
        return {
            "n_users": self._n,
            "n_records": self._n_records,
            "rounds": sorted(self._masks),
            "events": events,
            "participants": participants,
        }
