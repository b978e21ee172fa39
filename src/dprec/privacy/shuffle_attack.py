"""A lower bound on the shuffled epsilon of FMF-LDP's binary reports: the exact PLD of one
concrete pair of neighbouring inputs, composed over the rounds. Between it and the clone
bound of :mod:`dprec.privacy.shuffle` lies what no analysis here decides."""

from __future__ import annotations

import numpy as np
from dp_accounting.pld import privacy_loss_distribution as pld
from scipy import stats
from scipy.special import expit

from dprec.errors import DprecError, check_positive
from dprec.privacy.shuffle import check_shuffle_args

__all__ = ["attack_lower_bound"]


def _count_laws(eps0: float, k: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Laws of the number of +1 reports in one round of ``n`` senders x ``k`` binary reports:
    the target's inputs all +1 (first) or all -1 (second), every other input -1."""
    plus, minus = float(expit(eps0)), float(expit(-eps0))  # P(+1 | x = 1), P(+1 | x = -1)
    others = stats.binom.pmf(np.arange((n - 1) * k + 1), (n - 1) * k, minus)
    own = np.arange(k + 1)
    return (np.convolve(stats.binom.pmf(own, k, plus), others),
            np.convolve(stats.binom.pmf(own, k, minus), others))


def _optimistic_pld(upper: np.ndarray, lower: np.ndarray, interval: float,
                    drop: float) -> pld.PrivacyLossDistribution:
    """PLD of (upper, lower) on counts 0, 1, ... with every loss rounded down and the counts
    in either tail of ``upper`` (mass <= ``drop`` each) dropped: its hockey-stick divergences
    are at most the true ones."""
    cdf, sf = np.cumsum(upper), np.cumsum(upper[::-1])[::-1]
    keep = (cdf > drop) & (sf > drop) & (upper > 0) & (lower > 0)
    loss = np.log(upper[keep]) - np.log(lower[keep])
    index = np.floor(loss / interval + 1e-9).astype(np.int64)
    uniq, inv = np.unique(index, return_inverse=True)
    probs = np.bincount(inv, weights=upper[keep])
    return pld.PrivacyLossDistribution.create_from_rounded_probability(
        dict(zip(uniq.tolist(), probs.tolist(), strict=True)), 0.0, interval,
        pessimistic_estimate=False)


def attack_lower_bound(eps0: float, k: int, n: int, rounds: int, delta: float,
                       value_discretization_interval: float = 1e-4) -> float:
    """A lower bound on the shuffled ``eps`` at ``delta`` of ``rounds`` rounds in each of
    which ``n`` users send ``k`` binary ``eps0``-LDP reports (FMF-LDP, Algorithm 1) that one
    proxy shuffles together.

    The concrete neighbouring pair: every other user's clipped gradient entries are -1, the
    target's all +1 or all -1, in every round. The report indices are then independent of the
    data and the number of +1 reports of a round is sufficient: ``Bin(k, P(+1 | x)) +
    Bin((n - 1) k, P(+1 | -1))``. The rounds are independent given the pair, so the exact
    ``eps`` of the pair is that of the ``rounds``-fold product, both directions (the larger
    is returned). Losses are rounded down and counts in the tails (mass ``1e-9 delta``)
    dropped, so the result
    is at most the pair's exact ``eps``, which is at most the protocol's. It bounds the
    mechanism whose inputs are worst-case clipped gradients (what the upper bound assumes);
    a real data set need not realise these gradients. Keeping each round's ``k`` report
    slots apart (one shuffle per slot) gives the same figure to ~1e-2.
    """
    check_shuffle_args(eps0, n, delta)
    for name, value in (("k", k), ("rounds", rounds)):
        if isinstance(value, bool) or int(value) != value or value < 1:
            raise DprecError(f"{name} must be an integer >= 1, got {value!r}")
    check_positive("value_discretization_interval", value_discretization_interval)
    plus, minus = _count_laws(float(eps0), int(k), int(n))
    out = 0.0
    for upper, lower in ((plus, minus), (minus, plus)):
        one = _optimistic_pld(upper, lower, float(value_discretization_interval),
                              delta * 1e-9)
        many = one.self_compose(int(rounds)) if rounds > 1 else one
        out = max(out, float(many.get_epsilon_for_delta(delta)))
    return max(0.0, out)
