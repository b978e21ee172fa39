"""Privacy levels of an event log.

:func:`account` reads an event log and returns :class:`PrivacyLevels`: the worst-case user
(users grouped by their vector of event counts; only count vectors not dominated by another
are composed, since composing more events never lowers epsilon) at user level (all events)
and at event level (one interaction: all ``unit="user"`` copies plus one copy per
``unit="interaction"`` record), with the PLD analysis and, beside it, basic composition.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from dprec.errors import DprecError
from dprec.privacy.accountant import (
    SIDE_RANK,
    Accountant,
    Direction,
    DpEvent,
    event_sides,
    flatten_events,
    weakest_sides,
)
from dprec.privacy.basic_accountant import BasicAccountant
from dprec.privacy.events import EventLog, ShuffledReportDpEvent, describe_event
from dprec.privacy.guarantee import Guarantee, Model
from dprec.privacy.pld_accountant import PldAccountant

__all__ = ["PrivacyLevels", "account"]


@dataclass(frozen=True)
class PrivacyLevels:
    """Guarantees of one run: per interaction, per user (tightest), per user (basic)."""

    event: Guarantee
    user: Guarantee
    user_basic: Guarantee | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "event": self.event.to_json(),
            "user": self.user.to_json(),
            "user_basic": None if self.user_basic is None else self.user_basic.to_json(),
        }


def _unique_rows(matrix: np.ndarray) -> np.ndarray:
    """Distinct rows (lexicographic sort per column; faster than ``np.unique(axis=0)``)."""
    order = np.lexsort(matrix.T[::-1])
    rows = matrix[order]
    first = np.ones(rows.shape[0], dtype=bool)
    first[1:] = (rows[1:] != rows[:-1]).any(axis=1)
    return rows[first]


def _maximal_rows(rows: np.ndarray, limit: int) -> np.ndarray | None:
    """Rows not dominated (<= everywhere) by another row; None if more than ``limit``.

    Repeatedly takes the remaining row with the largest sum (never dominated by a remaining
    row) and drops every row it dominates; vectorised over rows.
    """
    out = []
    rest = rows
    while rest.shape[0]:
        if len(out) == limit:
            return None
        top = rest[int(np.argmax(rest.sum(axis=1)))]
        out.append(top)
        rest = rest[~(rest <= top).all(axis=1)]
    return np.array(out)


def _describe_row(events: Sequence[DpEvent], row: np.ndarray) -> str:
    merged = flatten_events((e, int(c)) for e, c in zip(events, row, strict=True))
    return " + ".join(f"{c} x {describe_event(e)}" for e, c in merged.items())


def _no_events(level: Literal["event", "user"], model: Model) -> Guarantee:
    return Guarantee(0.0, 0.0, level, "two", model, "no events", ("no user underwent an event",))


def _pld_level(
    acc: Accountant,
    events: Sequence[DpEvent],
    matrix: np.ndarray,
    delta: float,
    level: Literal["event", "user"],
    model: Model,
    max_groups: int,
) -> Guarantee:
    active = matrix[matrix.any(axis=1)] if matrix.size else matrix[:0]
    if not active.shape[0]:
        return _no_events(level, model)
    rows = _unique_rows(active)
    maxima = _maximal_rows(rows, max_groups)
    notes = []
    if maxima is None:
        maxima = rows.max(axis=0, keepdims=True)
        notes.append(
            f"more than {max_groups} undominated count vectors among {rows.shape[0]}: "
            "composed their elementwise maximum (an upper bound for every user)"
        )
    comps = [acc.compose(zip(events, row.tolist(), strict=True), delta) for row in maxima]
    worst = max(range(len(comps)), key=lambda i: comps[i].epsilon)
    sides = weakest_sides(c.sides for c in comps)
    notes.insert(
        0,
        f"worst case over {rows.shape[0]} distinct per-user event counts ({len(maxima)} composed)",
    )
    notes.extend(comps[worst].notes)
    return Guarantee(
        epsilon=comps[worst].epsilon,
        delta=delta,
        level=level,
        sides=sides,
        model=model,
        mechanism=_describe_row(events, maxima[worst]),
        notes=tuple(notes),
    )


def _basic_level(
    events: Sequence[DpEvent],
    matrix: np.ndarray,
    level: Literal["event", "user"],
    model: Model,
) -> Guarantee:
    basic = BasicAccountant()
    active = matrix.any(axis=1) if matrix.size else np.zeros(0, dtype=bool)
    if not active.any():
        return _no_events(level, model)
    used = [e for j, e in enumerate(events) if matrix[:, j].any()]
    sides = basic.compose([(e, 1) for e in used]).sides
    direction: Direction = "presence" if sides == "one" else "two"
    pairs = [basic.total_epsilon_delta(e, direction) for e in events]
    eps_vec = np.array([p[0] for p in pairs])
    delta_vec = np.array([p[1] for p in pairs])
    with np.errstate(invalid="ignore"):  # inf x 0 counts
        spent = np.where(matrix > 0, matrix * eps_vec, 0.0).sum(axis=1)
    # among users with eps = inf, the worst is one whose events include a "none" one (not one
    # whose one-sided events are only infinite in the two-sided direction)
    side_rank = np.array([SIDE_RANK[weakest_sides(event_sides(x) for x in flatten_events([(e, 1)]))]
                          for e in events])
    row_rank = np.where(matrix > 0, side_rank, 0).max(axis=1)
    worst = int(np.lexsort((np.where(np.isinf(spent), row_rank, 0), spent))[-1])
    dlt = float((matrix * delta_vec).sum(axis=1).max())
    return Guarantee(
        epsilon=float(spent[worst]),
        delta=min(1.0, dlt),
        level=level,
        sides=sides,
        model=model,
        mechanism=_describe_row(events, matrix[worst]),
        notes=(
            "basic composition (Dwork & Roth Thm 3.16): sum of per-event epsilons of the "
            "worst-case user",
            *(
                ("shuffled reports counted at their local eps0 (no amplification)",)
                if any(isinstance(e, ShuffledReportDpEvent) for e in used)
                else ()
            ),
        ),
    )


def _single_pure_event(events: Sequence[DpEvent], matrix: np.ndarray) -> bool:
    """Whether every user underwent at most one leaf event, each pure on its own: its basic
    ``(eps, 0)`` is its exact pure epsilon (not a shuffled report, whose basic epsilon is the
    local ``eps0`` and ignores amplification)."""
    leaves = [flatten_events([(e, 1)]) for e in events]
    if any(isinstance(x, ShuffledReportDpEvent) for lv in leaves for x in lv):
        return False
    sizes = np.array([sum(lv.values()) for lv in leaves], dtype=np.int64)
    return bool(matrix.size) and int((matrix @ sizes).max()) <= 1


def _prefer_pure(tight: Guarantee, basic: Guarantee, single: bool) -> Guarantee:
    """The pure ``(eps, 0)`` of basic composition in place of the PLD's ``(eps', delta)``
    when it is finite and pure and either no larger (``eps <= eps'``) or the bound of a single
    pure event (whose PLD differs only by the discretisation and an O(delta) shift: a pure
    mechanism is reported as pure). Both are sound; otherwise the PLD's stays."""
    if basic.delta != 0.0 or not math.isfinite(basic.epsilon):
        return tight
    if basic.epsilon <= tight.epsilon:
        why = f"no larger than the PLD analysis (eps={tight.epsilon:.6g} at delta={tight.delta:g})"
        return replace(basic, notes=(*basic.notes, why))
    if single:
        return replace(basic, notes=(
            "a single pure event per user: its exact pure (eps, 0) (the worst-case user's)",
            f"the PLD analysis gives eps={tight.epsilon:.6g} at delta={tight.delta:g}",
        ))
    return tight


def account(
    log: EventLog,
    delta: float,
    accountant: Accountant | None = None,
    *,
    max_groups: int = 64,
    model: Model | None = None,
) -> PrivacyLevels:
    """Event-level and user-level guarantees of the worst-case user in ``log`` at ``delta``.

    ``user``: PLD composition (``accountant``, default :class:`PldAccountant`) of all of the
    worst-case user's events; replaced by basic composition where that is tighter (a pure
    bound also holds at ``delta``), and by the pure ``(eps, 0)`` of a single pure event
    (:func:`_prefer_pure`). ``user_basic``: basic composition of the same events,
    None when an event has no pure epsilon (e.g. Gaussian). ``event``: the same for one
    interaction (every ``unit="user"`` copy, one copy per ``unit="interaction"`` record).
    Users who never underwent an event have eps = 0. ``model``: "shuffled" if the log holds
    shuffled reports, else "local", unless given. Raises
    :class:`~dprec.privacy.accountant.UnsupportedEventError` for events the accountant does
    not know.
    """
    if not 0 < delta < 1:
        raise DprecError(f"delta must be in (0, 1), got {delta}")
    if isinstance(max_groups, bool) or int(max_groups) != max_groups or max_groups < 1:
        raise DprecError(f"max_groups must be an integer >= 1, got {max_groups!r}")
    acc = accountant if accountant is not None else PldAccountant()
    keys, user_matrix = log.count_matrix("user")
    _, event_matrix = log.count_matrix("event")
    events = [e for e, _ in keys]
    for e in events:
        acc.check(e)
    leaves = flatten_events((e, 1) for e in events)
    if model is None:
        model = "shuffled" if any(isinstance(e, ShuffledReportDpEvent) for e in leaves) else "local"
    basic_ok = all(BasicAccountant().supports(e) for e in leaves)
    levels = {}
    for level, matrix in (("user", user_matrix), ("event", event_matrix)):
        tight = _pld_level(acc, events, matrix, delta, level, model, int(max_groups))
        basic = _basic_level(events, matrix, level, model) if basic_ok else None
        if basic is not None:
            tight = _prefer_pure(tight, basic, _single_pure_event(events, matrix))
        levels[level] = (tight, basic)
    return PrivacyLevels(
        event=levels["event"][0], user=levels["user"][0], user_basic=levels["user"][1]
    )
