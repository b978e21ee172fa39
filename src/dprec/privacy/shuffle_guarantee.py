"""FMF-LDP's per-user guarantee after the shuffling proxy (Feldman, McMillan, Talwar, FOCS
2021): :func:`shuffled_guarantee`, by default the PLD of FMT21's clone pair
(:func:`dprec.privacy.shuffle.clone_pair_pld`) composed over all shuffles;
:func:`local_guarantee`, the basic composition it falls back to; and :func:`compose_pld`,
the PLD composition of ``(eps, delta)`` pairs its ``per_shuffle_pairs`` analysis uses."""

from __future__ import annotations

import logging
import math
from typing import Literal

from dp_accounting.pld import common as pld_common
from dp_accounting.pld import privacy_loss_distribution as pld

from dprec.errors import DprecError, check_positive
from dprec.privacy.guarantee import Guarantee
from dprec.privacy.shuffle import (
    MAX_CLONE_EPS0,
    clone_pair_pld,
    closed_form_epsilon,
    condition_holds,
    numerical_epsilon,
)

logger = logging.getLogger(__name__)

__all__ = ["compose_pld", "local_guarantee", "shuffled_guarantee"]


def _check_count(count: int) -> int:
    if int(count) != count or count < 0:
        raise DprecError(f"count must be an integer >= 0, got {count}")
    return int(count)


def _check_eps_delta(eps: float, delta: float) -> None:
    if not eps >= 0:
        raise DprecError(f"eps must be >= 0, got {eps}")
    if not 0 <= delta <= 1:
        raise DprecError(f"delta must be in [0, 1], got {delta}")


def compose_pld(
    per_round_eps: float,
    per_round_delta: float,
    count: int,
    target_delta: float,
    value_discretization_interval: float = 1e-4,
) -> float:
    """``eps`` at ``target_delta`` after ``count`` uses of an ``(eps, delta)``-DP mechanism.

    Uses dp-accounting's pessimistic PLD of an ``(eps, delta)``-DP mechanism
    (``from_privacy_parameters``) self-composed ``count`` times. The ``+inf`` loss mass
    ``1 - (1 - per_round_delta)^count`` must be below ``target_delta``; otherwise the result
    is ``inf``. Rounding is pessimistic, so the answer is an upper bound.
    """
    _check_eps_delta(per_round_eps, per_round_delta)
    count = _check_count(count)
    if not 0 < target_delta < 1:
        raise DprecError(f"target_delta must be in (0, 1), got {target_delta}")
    check_positive("value_discretization_interval", value_discretization_interval)
    if count == 0 or (per_round_eps == 0 and per_round_delta == 0):
        return 0.0
    infinite_mass = -math.expm1(count * math.log1p(-per_round_delta))
    if infinite_mass >= target_delta:
        return math.inf
    if per_round_eps == 0:
        return 0.0
    params = pld_common.DifferentialPrivacyParameters(per_round_eps, per_round_delta)
    one = pld.from_privacy_parameters(params, value_discretization_interval)
    eps = one.self_compose(count).get_epsilon_for_delta(target_delta)
    return max(0.0, float(eps))


def local_guarantee(eps0_per_report: float, k: int, epochs: int, note: str = "") -> Guarantee:
    """Per-user local guarantee of ``k`` ``eps0``-LDP reports per epoch over ``epochs``.

    Basic composition: ``epochs * k * eps0`` (the FMF-LDP paper states ``k eps0``).
    """
    check_positive("eps0_per_report", eps0_per_report)
    count = _check_count(k) * _check_count(epochs)
    notes = (f"basic composition of {count} = k x epochs reports of eps0={eps0_per_report:g}",)
    if note:
        notes = notes + (note,)
    return Guarantee(
        epsilon=count * eps0_per_report,
        delta=0.0,
        level="user",
        sides="two",
        model="local",
        mechanism=f"{count} eps0-LDP reports",
        notes=notes,
    )


def shuffled_guarantee(
    eps0_per_report: float,
    n_users: int,
    k: int,
    epochs: int,
    delta: float,
    method: str = "numerical",
    shuffle_delta_fraction: float = 0.5,
    value_discretization_interval: float = 1e-4,
    analysis: Literal["clone_pld", "per_shuffle_pairs"] = "clone_pld",
) -> Guarantee:
    """Per-user central guarantee of FMF-LDP behind the shuffling proxy.

    Model: in every epoch each of the ``k`` report slots is its own shuffle of ``n_users``
    single reports, one per user, each ``eps0``-LDP (a proxy that shuffles all
    ``n_users * k`` reports together releases a post-processing of this view, so the bound
    carries over). ``count = k * epochs`` shuffles in all.

    ``analysis``:

    - ``"clone_pld"`` (default, tightest): FMT21 Thm 3.2 makes each shuffle a
      post-processing of the clone pair ``(P, Q)``, a dominating pair; dominating pairs
      compose adaptively (Zhu, Dong, Wang, AISTATS 2022), so the PLD of ``(P, Q)``
      (:func:`~dprec.privacy.shuffle.clone_pair_pld`) self-composed ``count`` times gives
      ``eps`` at the whole ``delta``. ``method`` must be ``"numerical"``.
    - ``"per_shuffle_pairs"``: each shuffle is first reduced to an ``(eps_s, delta_s)`` pair
      by FMT21 (``method``: ``"numerical"``, valid for every ``eps0``, or
      ``"closed_form"``, Theorem 3.1, which needs ``eps0 <= log(n / (16 log(2/delta_s)))``),
      and the worst-case PLD of those pairs is composed (:func:`compose_pld`). Sound but
      looser: the pair forgets the shape of the shuffle's privacy loss. Delta split:
      ``delta_s = shuffle_delta_fraction * delta / count`` per shuffle, the rest of
      ``delta`` to the composition. ``method="closed_form"`` always uses this analysis (the
      closed form only bounds a pair).

    Returns the local guarantee (:func:`local_guarantee`) with a note when the closed-form
    condition fails, when the shuffle gives no amplification (a single shuffle's bound is
    ``eps0``; always so for ``eps0 >= 700``, where no clone can appear), or when the composed
    bound is not below the local one.
    """
    check_positive("eps0_per_report", eps0_per_report)
    if not math.isfinite(eps0_per_report):
        raise DprecError(f"eps0_per_report must be finite, got {eps0_per_report}")
    if int(n_users) != n_users or n_users < 1:
        raise DprecError(f"n_users must be an integer >= 1, got {n_users}")
    count = _check_count(k) * _check_count(epochs)
    if count == 0:
        raise DprecError(f"k * epochs must be >= 1, got k={k}, epochs={epochs}")
    if not 0 < delta < 1:
        raise DprecError(f"delta must be in (0, 1), got {delta}")
    if not 0 < shuffle_delta_fraction < 1:
        raise DprecError(f"shuffle_delta_fraction must be in (0, 1), got {shuffle_delta_fraction}")
    if method not in ("numerical", "closed_form"):
        raise DprecError(f"method must be 'numerical' or 'closed_form', got {method!r}")
    if analysis not in ("clone_pld", "per_shuffle_pairs"):
        raise DprecError(f"analysis must be 'clone_pld' or 'per_shuffle_pairs', got {analysis!r}")
    check_positive("value_discretization_interval", value_discretization_interval)
    if eps0_per_report >= MAX_CLONE_EPS0:
        return local_guarantee(
            eps0_per_report,
            k,
            epochs,
            note=(
                f"no shuffling amplification: eps0={eps0_per_report:g} >= {MAX_CLONE_EPS0:g}, "
                "so e^-eps0 underflows and no clone can appear (FMT21)"
            ),
        )
    if method == "numerical" and analysis == "clone_pld":
        return _clone_pld_guarantee(
            eps0_per_report, int(n_users), k, epochs, delta, value_discretization_interval
        )
    return _per_shuffle_pairs_guarantee(
        eps0_per_report,
        int(n_users),
        k,
        epochs,
        delta,
        method,
        shuffle_delta_fraction,
        value_discretization_interval,
    )


def _clone_pld_guarantee(
    eps0: float, n_users: int, k: int, epochs: int, delta: float, interval: float
) -> Guarantee:
    count = k * epochs
    if numerical_epsilon(eps0, n_users, delta, tol=1e-6) >= eps0 - 1e-5:
        return local_guarantee(
            eps0,
            k,
            epochs,
            note=(
                "no shuffling amplification: FMT21 numerical clone analysis (Sec. 4) gives "
                f"eps = eps0 (to 1e-5) for one shuffle of n={n_users} at delta={delta:.3g}"
            ),
        )
    one = clone_pair_pld(float(eps0), n_users, float(interval))
    eps_one = float(one.get_epsilon_for_delta(delta))
    eps_total = max(0.0, float(one.self_compose(count).get_epsilon_for_delta(delta)))
    local = count * eps0
    bound = "FMT21 numerical clone analysis (Thm 3.2): the PLD of the clone pair (P, Q)"
    if not eps_total < local:
        return local_guarantee(
            eps0,
            k,
            epochs,
            note=(
                f"no shuffling amplification: the shuffling bound ({bound}, composed: "
                f"eps={eps_total:.4g}) is not below the local bound for n={n_users}"
            ),
        )
    logger.debug(
        "clone PLD: one shuffle eps=%.4g -> %d shuffles eps=%.4g", eps_one, count, eps_total
    )
    return _shuffled_user_level(eps_total, delta, count, n_users, eps0, (
        f"per-shuffle: {bound}, built exactly (pessimistic rounding to {interval:g}); "
        f"one shuffle alone: eps={eps_one:.4g} at delta={delta:.3g}",
        f"composition: PLD (dp-accounting) of the clone pair self-composed {count} = "
        f"k x epochs times (k={k}, epochs={epochs}) at delta={delta:.3g}; sound because "
        "dominating pairs compose adaptively (Zhu, Dong, Wang 2022)",
        "delta split: none, all of delta is used once, after composition",
        "each report slot is treated as a separate shuffle of one report per user",
        f"local guarantee for comparison: eps={local:.4g} (basic composition)",
    ))


def _per_shuffle_pairs_guarantee(
    eps0_per_report: float,
    n_users: int,
    k: int,
    epochs: int,
    delta: float,
    method: str,
    shuffle_delta_fraction: float,
    value_discretization_interval: float,
) -> Guarantee:
    count = k * epochs
    delta_s = shuffle_delta_fraction * delta / count
    if method == "closed_form":
        if not condition_holds(eps0_per_report, n_users, delta_s):
            limit = math.log(n_users / (16.0 * math.log(2.0 / delta_s)))
            return local_guarantee(
                eps0_per_report,
                k,
                epochs,
                note=(
                    "no shuffling amplification claimed: FMT21 Thm 3.1 needs "
                    f"eps0 <= log(n/(16 log(2/delta_s))) = {limit:.4g} for n={n_users}, "
                    f"delta_s={delta_s:.3g}; got eps0={eps0_per_report:g}"
                ),
            )
        eps_s = closed_form_epsilon(eps0_per_report, n_users, delta_s)
        bound = "FMT21 closed form (Thm 3.1)"
    else:
        eps_s = numerical_epsilon(eps0_per_report, n_users, delta_s)
        bound = "FMT21 numerical clone analysis (Sec. 4)"
    if eps_s >= eps0_per_report:
        return local_guarantee(
            eps0_per_report,
            k,
            epochs,
            note=f"no shuffling amplification: {bound} gives eps_s = eps0 for n={n_users}",
        )
    eps_total = compose_pld(eps_s, delta_s, count, delta, value_discretization_interval)
    local = count * eps0_per_report
    if not eps_total < local:
        return local_guarantee(
            eps0_per_report,
            k,
            epochs,
            note=(
                f"shuffling bound ({bound}, composed: eps={eps_total:.4g}) is not below the "
                f"local bound for n={n_users}"
            ),
        )
    logger.debug("shuffle eps_s=%.4g delta_s=%.3g -> composed eps=%.4g", eps_s, delta_s, eps_total)
    return _shuffled_user_level(eps_total, delta, count, n_users, eps0_per_report, (
        f"per-shuffle bound: {bound}: eps_s={eps_s:.4g}, delta_s={delta_s:.3g}",
        f"composition: PLD (dp-accounting) over {count} = k x epochs shuffles "
        f"(k={k}, epochs={epochs}) at delta={delta:.3g} of the per-shuffle (eps_s, delta_s) "
        "pairs (analysis 'per_shuffle_pairs')",
        f"delta split: {shuffle_delta_fraction:g} of delta to the shuffles "
        f"(delta_s = {shuffle_delta_fraction:g} delta / {count}), the rest to composition",
        "each report slot is treated as a separate shuffle of one report per user",
        f"local guarantee for comparison: eps={local:.4g} (basic composition)",
    ))


def _shuffled_user_level(eps: float, delta: float, count: int, n_users: int, eps0: float,
                         notes: tuple[str, ...]) -> Guarantee:
    """The user-level guarantee of ``count`` shuffles of ``n_users`` ``eps0``-LDP reports."""
    return Guarantee(epsilon=eps, delta=delta, level="user", sides="two", model="shuffled",
                     mechanism=f"{count} shuffles of {n_users} eps0={eps0:g}-LDP reports",
                     notes=notes)
