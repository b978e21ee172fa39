"""The public terms of a round's Prio3 validity check (:mod:`.vdaf.contribution`), in the
form the proxy publishes and a device compares with the check it computed itself from the
config it validated: a device never proves against a check it did not compute, and a proxy
verifying another check than the config's is refused before any share is drawn.

One form for every secure-sum system: the terms of each round's check
(:func:`check_terms`), listed per round only where the rounds' checks differ (dpals' count
round and ALS rounds, :func:`validity_terms`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dprec.protocol.secure_sum.vdaf.contribution import ContributionCheck

__all__ = ["PROVED_CLIENT", "check_terms", "validity_details", "validity_terms"]


def check_terms(check: ContributionCheck) -> dict[str, Any]:
    """The check's public numbers: ``T``, ``S``, ``B^2`` and the proofs; for a k-hot check
    (dp-pop) ``k`` (the sum's upper end less ``S``), for a bounded-range check (dpals,
    dp-fedavg) the dimension ``d`` and the coordinate range ``[low, high]``."""
    c, t = check.circuit, check.truncation
    assert t is not None
    out: dict[str, Any] = {"T": t.coordinate_bound, "S": t.sum_bound,
                           "B2": int(c.l2_bound_sq or 0)}
    if c.sum_range is not None:
        out["k"] = c.sum_range[1] - t.sum_bound
    else:
        out.update(d=int(c.dimension), low=int(c.low), high=int(c.high))
    return {**out, "proofs": check.proofs}


def validity_terms(checks: Sequence[ContributionCheck]) -> dict[str, Any]:
    """What the proxy publishes as ``validity`` for a run whose rounds have ``checks``:
    ``{"kind": "prio3", **terms}`` when every round has the same terms, else
    ``{"kind": "prio3", "rounds": [terms of round 0, ...]}``."""
    terms = [check_terms(c) for c in checks]
    if all(t == terms[0] for t in terms):
        return {"kind": "prio3", **terms[0]}
    return {"kind": "prio3", "rounds": terms}


def validity_details(checks: Sequence[ContributionCheck], epsilon: float, delta: float
                     ) -> dict[str, Any]:
    """The report's ``validity`` record of a run proved against ``checks`` (one per round):
    the published terms, the weakest round's soundness, and what the honest clients'
    truncated shares cost. Each round's truncated shares are within total variation
    ``n (eta + eta_2)`` of untruncated Skellam shares; over the rounds these add, so every
    level holds at ``delta_total = delta + truncation_delta``, ``truncation_delta = sum_r
    (1 + e^epsilon) n (eta_r + eta_2,r)`` (:meth:`ContributionCheck.delta_cost`)."""
    cost = sum(c.delta_cost(epsilon) for c in checks)
    return {"validity": {
        **validity_terms(checks),
        "soundness_log2": round(max(c.soundness_log2 for c in checks), 2),
        "truncation_delta": cost, "delta_total": delta + cost,
        "note": "each level holds at delta_total = delta + truncation_delta: the honest "
                "clients' noise shares are truncated to |z_j| <= T, |sum z| <= S, "
                "||v + z||^2 <= B2 so that their uploads pass the proof; over the "
                "services every upload is proved and an invalid one refused"}}


PROVED_CLIENT = (
    "validity=prio3 (the default): in process the honest simulated clients' vectors are "
    "summed as block totals (they fail the check with probability at most n (eta + eta_2), "
    "counted in delta_total) and a simulated malicious client's plaintext vector is refused "
    "where the proof would refuse it; over the services every upload proves (Prio3, "
    "verified jointly by the proxy and the server) that each coordinate is within the "
    "round's clip plus the noise bound T and "
    "||y||^2 <= B2 (the numbers under validity); an invalid upload is refused with its "
    "reason and the round releases the rest. A malicious client can still send any vector "
    "inside those bounds")
"""The report's note on what a malicious client can do under a bounded-range check."""
