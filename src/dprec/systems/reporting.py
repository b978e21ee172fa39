"""Privacy reports built from what happened: an accountant applied to a run's event log."""

from __future__ import annotations

from typing import Literal

from dprec.errors import DprecError
from dprec.privacy.accountant import Accountant, PldAccountant, account
from dprec.privacy.events import EventLog
from dprec.privacy.guarantee import Guarantee, Model, PrivacyReport

__all__ = ["privacy_report_from_log"]


def privacy_report_from_log(
    system: str,
    threat_model: str,
    log: EventLog,
    claimed: Guarantee | None,
    mechanisms: tuple[dict[str, object], ...],
    true: Guarantee | None = None,
    delta: float = 1e-6,
    true_level: Literal["event", "user"] = "user",
    extra: dict[str, object] | None = None,
    model: Model | None = None,
    accountant: Accountant | None = None,
) -> PrivacyReport:
    """The report of one run: the published claim, ``privacy.true`` and both levels.

    ``levels`` = {"event": per interaction, "user": all of a user's data (tightest sound
    analysis), "user_basic": basic composition}, each computed by the accountant from
    ``log`` (the users who really reported, in the rounds that really ran). ``true`` is the
    level ``true_level`` of those (default: the user level) unless given. ``model``:
    "central" for a trusted curator (default: local, or shuffled when the log holds shuffled
    reports). ``accountant``: default PLD; its
    neighbouring relation is reported as ``adjacency``.
    """
    if true_level not in ("event", "user"):
        raise DprecError(f"true_level must be 'event' or 'user', got {true_level!r}")
    acc = accountant if accountant is not None else PldAccountant()
    levels = account(log, delta, acc, model=model)
    body: dict[str, object] = {"levels": levels.to_json(), "adjacency": acc.adjacency.value,
                               "events": log.to_json()}
    body.update(extra or {})
    return PrivacyReport(
        system=system,
        threat_model=threat_model,
        true=true if true is not None else getattr(levels, true_level),
        claimed=claimed,
        mechanisms=mechanisms,
        extra=body,
    )
