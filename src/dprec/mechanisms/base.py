"""One interface for every local randomiser: what it does, what happened, how it is named.

After google/differential-privacy's dp_accounting, which keeps what happened (a frozen
``DpEvent``) apart from what it cost (an accountant), and opendp's measurement (a function
with its privacy map): a :class:`Mechanism` samples (``__call__``), says which event one use
of it is (``dp_event``) and describes its parameters for a report (``describe``). It never
states its own epsilon; the cost of ``count`` uses is the accountant's answer for the event
(:func:`event_guarantee`), and a run's report is built from the events it logged
(:func:`dprec.systems.reporting.privacy_report_from_log`).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import dp_accounting
import numpy as np

from dprec.errors import DprecError
from dprec.privacy.accountant import event_sides
from dprec.privacy.basic_accountant import BasicAccountant
from dprec.privacy.events import describe_event
from dprec.privacy.guarantee import Guarantee, Level, Model

__all__ = ["Mechanism", "event_guarantee"]


@runtime_checkable
class Mechanism(Protocol):
    """A randomiser with its accounting event.

    ``mechanism(x, rng)``: one randomised output per input, drawn from the explicit
    ``numpy.random.Generator`` ``rng``. ``dp_event()``: the ``DpEvent`` of one such output of
    one value (one report, one bit, one read), the only thing an accountant sees.
    ``describe()``: the parameters, JSON-safe, for the report's ``mechanisms`` list.
    """

    def __call__(self, x: Any, rng: np.random.Generator) -> Any: ...

    def dp_event(self) -> dp_accounting.DpEvent: ...

    def describe(self) -> dict[str, object]: ...


def event_guarantee(event: dp_accounting.DpEvent | Mechanism, count: int = 1,
                    level: Level = "event", model: Model = "local") -> Guarantee:
    """The pure guarantee of ``count`` copies of ``event`` (or of a mechanism's
    ``dp_event()``), by the basic accountant alone (Dwork & Roth 2014, Thm 3.16):
    ``count x eps``, with the presence-side epsilon ``ln(p/q)`` of a one-sided bit flip, and
    ``inf`` with sides "none" for an event without a finite epsilon.

    One copy of a pure local event is exactly its own guarantee; for many copies this is
    basic composition (an upper bound; a run's report composes its logged events with the
    PLD accountant, :func:`~dprec.privacy.levels.account`).
    """
    if isinstance(count, bool) or int(count) != count or count < 1:
        raise DprecError(f"count must be an integer >= 1, got {count!r}")
    if not isinstance(event, dp_accounting.DpEvent):
        event = event.dp_event()
    whole = event if count == 1 else dp_accounting.SelfComposedDpEvent(event, int(count))
    eps, delta = BasicAccountant().total_epsilon_delta(whole)
    sides = event_sides(event)
    return Guarantee(
        epsilon=eps, delta=delta, level=level, sides=sides, model=model,
        mechanism=f"{int(count)} x {describe_event(event)}",
        notes=(f"basic accountant: {int(count)} x the event's "
               + ("presence-side " if sides == "one" else "") + "pure epsilon",))
