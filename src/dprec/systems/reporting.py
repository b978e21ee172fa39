"""Privacy reports built from what happened: an accountant applied to a run's event log."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal

from dprec.errors import DprecError, PrivacyParameterError
from dprec.privacy.accountant import Accountant
from dprec.privacy.events import EventLog
from dprec.privacy.guarantee import Guarantee, Model, PrivacyReport
from dprec.privacy.levels import account
from dprec.privacy.pld_accountant import PldAccountant

__all__ = ["SIMULATION_ONLY", "SIMULATION_ONLY_NOTE", "check_shares", "privacy_report_from_log",
           "secure_sum_report", "share_record", "simulation_only"]

SIMULATION_ONLY = "simulation_only"
"""The diagnostics key under which a run keeps statistics of the clients' private data."""

SIMULATION_ONLY_NOTE = (
    "simulation only: statistics of the clients' private data (e.g. the fraction of clipped "
    "user vectors, the median user norm, how many (user, item) pairs or clients contributed), "
    "measured by the simulation, which holds every client in one process. No DP event "
    "accounts for them, so they are not covered by the privacy report; a deployment never "
    "has them: no client sends them and no server or proxy output carries them")


def simulation_only(**stats: object) -> dict[str, object]:
    """``{"simulation_only": {"note": ..., **stats}}``: private statistics a simulated run
    may show (:data:`SIMULATION_ONLY_NOTE`), kept apart from the diagnostics a deployed
    server could have."""
    return {SIMULATION_ONLY: {"note": SIMULATION_ONLY_NOTE, **stats}}


def share_record(release_mu: float, share_mu: float, min_honest: int) -> dict[str, object]:
    """A secure-sum report's share entries: ``share_mu``, the per-client ``Sk(share_mu)`` the
    clients actually drew (read from their noise, never recomputed), beside what the
    accountant assumed, ``share_mu_assumed = mu / min_honest``, and the noise that
    ``min_honest`` honest shares carry, ``honest_noise_mu = min_honest share_mu`` (>= mu for
    the guarantee to hold)."""
    return {"share_mu": float(share_mu),
            "share_mu_assumed": float(release_mu) / int(min_honest),
            "honest_noise_mu": float(share_mu) * int(min_honest)}


def check_shares(release: str, release_mu: float, share_mu: float, min_honest: int) -> None:
    """PrivacyParameterError when ``min_honest`` shares ``Sk(share_mu)`` carry less than the
    ``Sk(mu)`` the accountant assumed for ``release`` (relative tolerance 1e-9): the run's
    clients would draw less noise than its privacy report claims."""
    if float(share_mu) * int(min_honest) < float(release_mu) * (1.0 - 1e-9):
        raise PrivacyParameterError(
            f"{release}: the clients draw shares Sk({share_mu:.6g}); {min_honest} honest "
            f"shares carry Sk({share_mu * min_honest:.6g}), less than the Sk({release_mu:.6g}) "
            "the accountant assumed: refused, the run would claim a guarantee its noise "
            "does not meet")


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


def secure_sum_report(
    system: str,
    *,
    aggregation: str,
    epsilon: float,
    delta: float,
    log: EventLog,
    threat_models: tuple[str, str],
    mechanisms: tuple[dict[str, object], ...],
    contribution_bound: str,
    assumptions: Mapping[str, object],
    secure_sum: Callable[[], dict[str, object]],
    accountant: Accountant,
    details: Mapping[str, object] | None = None,
) -> PrivacyReport:
    """The report of a system on the secure sum (dp-pop, dpals, dp-fedavg), calibrated to a
    per-user target (``epsilon``, ``delta``) and accounted from ``log``.

    ``aggregation`` "secure": model ``secure-sum``, the first of ``threat_models``, the
    ``threat_model_assumptions`` ``assumptions`` (min_honest, clients, notes; the server and
    the proxy never collude) and the secure sum's parameters ``secure_sum()``; "trusted": model
    ``central``, the second threat model and a trusted curator. ``extra`` holds, in order,
    ``model``, ``contribution_bound``, the system's own ``details``, the assumptions and (secure
    only) ``secure_sum``, besides the levels, adjacency and events of
    :func:`privacy_report_from_log`."""
    if aggregation not in ("secure", "trusted"):
        raise DprecError(f"aggregation must be secure or trusted, got {aggregation!r}")
    secure = aggregation == "secure"
    model: Model = "secure-sum" if secure else "central"
    claimed = Guarantee(epsilon, delta, "user", "two", model, "target of the calibration")
    extra: dict[str, object] = {
        "model": model, "contribution_bound": contribution_bound, **(details or {}),
        "threat_model_assumptions": dict(assumptions) if secure else {"trusted_curator": True},
    }
    if secure:
        extra["secure_sum"] = secure_sum()
    return privacy_report_from_log(
        system, threat_models[0] if secure else threat_models[1], log, claimed, mechanisms,
        delta=delta, extra=extra, model=model, accountant=accountant)
