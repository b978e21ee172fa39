"""dpals' frozen config and its validation, importable by a device without the system's
in-process or server code (the published protocol carries it:
:class:`~dprec.systems.deployable.ProtocolInfo`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from dprec.errors import InvalidParameterError, PrivacyParameterError

__all__ = ["Aggregation", "DpalsConfig", "ShareDraws", "Weighting"]

Weighting = Literal["uniform", "tail", "adaptive"]
Aggregation = Literal["secure", "trusted"]
ShareDraws = Literal["summed", "per-client"]


def _positive_int(name: str, value: object, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise InvalidParameterError(f"{name} must be an integer >= 1, got {value!r}")



def _positive(name: str, value: float) -> None:
    if not (isinstance(value, int | float) and value > 0 and math.isfinite(value)):
        raise InvalidParameterError(f"{name} must be finite and > 0, got {value!r}")



@dataclass(frozen=True)
class DpalsConfig:
    """Settings of dpals.

    Defaults: k, steps, factors, reg, clip and unobserved_weight chosen by ``dprec tune`` on
    ML-100K validation (2 seeds) at eps 8 (factors 4/8/16, reg 1/3/10, clip .02/.05/.1,
    steps 2/3: HR@10 .455 at factors 4, reg 3, clip .05, steps 2, within .002 of the best)
    and at eps 1 (steps 1/2, k 20/50/100, unobserved_weight .03/.1/.3, factors 4/8:
    factors 4 and steps 2 best, k and unobserved_weight within .005). Untuned on the ML-20M
    scale of the anchor: use ``--preset paper`` there.
    """

    epsilon: float = 1.0
    """Target per-user epsilon of the whole run (zero-out adjacency for secure, add/remove
    one user for trusted)."""
    delta: float = 1e-6
    """Target delta."""
    weighting: Weighting = "uniform"
    """uniform: k items at random; tail: the k least frequent by DP counts; adaptive: weights
    c_j proportional to count_j^exponent with sum c_j^2 = k (AdaDPALS)."""
    k: int = 50
    """The per-user budget: at most k items (uniform, tail) or sum_j c_j^2 = k (adaptive)."""
    steps: int | None = 2
    """ALS steps (noisy item solves); None: the anchor's schedule, 3 / 4 / 5 at eps <= 1 /
    <= 5 / above."""
    factors: int = 4
    """Latent factors F."""
    reg: float = 3.0
    """L2 regularisation of both solves."""
    unobserved_weight: float = 0.1
    """w: the weight of the global Gramian (every unobserved pair pulled to 0), > 0."""
    clip: float = 0.05
    """C: each user vector is clipped to L2 norm C before it contributes (the noise on the
    sums is C^2 (Gramians) and C (right-hand sides) times the multiplier)."""
    rhs_weight: float = 1.0
    """beta: the right-hand side's weight in a contribution; its noise relative to the
    per-item Gramians' is 1 / beta (s2 / s1 of the anchor)."""
    gamma: float | None = None
    """Quantisation scale; None: the smallest that keeps rounding within 1% of Delta_2."""
    aggregation: Aggregation = "secure"
    """secure: every client adds a Skellam share; trusted: a curator adds one draw."""
    min_honest: int | None = None
    """secure: the guarantee holds for at least this many honest contributing clients
    (default: all); shares are Sk(mu / min_honest)."""
    exponent: float = -0.05
    """adaptive: c_j proportional to count_j^exponent (<= 0). ML-100K validation at eps 8
    (k 100, max_items 600, count_noise_ratio 3): HR@10 .505 / .501 / .498 / .482 at 0 /
    -.05 / -.1 / -.3: the weights matter less than using all of a user's items."""
    max_items: int | None = None
    """adaptive: the most items a user spreads its weights over (its least frequent); bounds
    the rounding term; None: every item (M = the number of items)."""
    count_k: int | None = None
    """Items per user in the DP count round (tail, adaptive); None: k."""
    head_items: int | None = None
    """Train on the ``head_items`` items of largest DP count only: clients select among their
    head items, the tail gets zero factors (score 0; :mod:`.frequency`). None: every item.
    Switches the count round on (uniform weighting too)."""
    reg_exponent: float = 0.0
    """Frequency-scaled regularisation: item j's reg is ``reg w_j``, ``w_j`` proportional to
    ``(count_j + 1)^reg_exponent`` (:mod:`.frequency`); 0: one reg. Non-zero switches the
    count round on."""
    count_noise_ratio: float = 1.0
    """Noise multiplier of the count round relative to the training releases'."""
    gram_noise_ratio: float = 1.0
    """Noise multiplier of the global Gramian relative to the per-item statistics'."""
    init_scale: float = 0.1
    """Standard deviation of the random initial item factors (public); the root mean square
    of the power-iteration start's entries."""
    init: Literal["random", "power"] = "random"
    """The item factors the first ALS step solves the users from: random (public), or
    power: ``init_iterations`` noisy power iterations on the users' weighted item matrix, a
    DP estimate of its top-F right singular subspace (:mod:`.power_init`; Chien et al.,
    ICML 2021), accounted with the other releases (``init_power``)."""
    init_iterations: int = 1
    """init = power: the noisy power iterations (secure-sum rounds)."""
    init_noise_ratio: float = 1.0
    """init = power: the noise multiplier of ``init_power`` relative to the training
    releases'."""
    shares: ShareDraws = "summed"
    """secure: per-client (each client's share from its own generator) or summed (their sum
    at once, split among the clients by a binary tree of binomials: the same distribution,
    O(items) in process; :mod:`.noise`). Either way every transport and backend gives the
    same numbers."""
    n_clients: int | None = None
    """secure: the clients enrolled (they fix each share and q); None: the training rows. A
    server started as a service needs it."""
    validity: Literal["prio3", "none"] = "prio3"
    """secure: prio3 (the default) makes every upload over the services prove with Prio3
    that each coordinate is within C + T and the round's L2 bound (:func:`~.plan.round_check`),
    each device's share truncated to T; an upload that does not verify is refused with its
    reason and the round releases the rest. In process the honest simulated clients' block
    totals are summed as with none (the same numbers bit for bit; the report adds the
    truncation's delta), and a simulated malicious client's vector (``clients_hook``) is
    refused where the proof would refuse it (:func:`~.simulation.in_process_checks`). none:
    every vector is summed, one malicious client can add any element of Z_q^d."""

    def __post_init__(self) -> None:
        if not (self.epsilon > 0 and math.isfinite(self.epsilon)):
            raise PrivacyParameterError(f"epsilon must be finite and > 0, got {self.epsilon}")
        if not 0 < self.delta < 1:
            raise PrivacyParameterError(f"delta must be in (0, 1), got {self.delta}")
        if self.init not in ("random", "power"):
            raise InvalidParameterError(f"init must be 'random' or 'power', got {self.init!r}")
        if self.validity not in ("prio3", "none"):
            raise InvalidParameterError(f"validity must be 'prio3' or 'none', got "
                                        f"{self.validity!r}")
        if self.weighting not in ("uniform", "tail", "adaptive"):
            raise InvalidParameterError(f"weighting must be uniform, tail or adaptive, got "
                                        f"{self.weighting!r}")
        for name in ("k", "factors", "init_iterations"):
            _positive_int(name, getattr(self, name))
        for name in ("steps", "min_honest", "max_items", "count_k", "n_clients", "head_items"):
            _positive_int(name, getattr(self, name), allow_none=True)
        for name in ("reg", "unobserved_weight", "clip", "rhs_weight", "count_noise_ratio",
                     "gram_noise_ratio", "init_scale", "init_noise_ratio"):
            _positive(name, getattr(self, name))
        if self.gamma is not None:
            _positive("gamma", self.gamma)
        if not (isinstance(self.reg_exponent, int | float)
                and -2.0 <= self.reg_exponent <= 2.0):
            raise InvalidParameterError(f"reg_exponent must be in [-2, 2], got "
                                        f"{self.reg_exponent!r}")
        if not (self.exponent <= 0 and math.isfinite(self.exponent)):
            raise InvalidParameterError(f"exponent must be finite and <= 0, got {self.exponent}")
        if self.aggregation not in ("secure", "trusted"):
            raise InvalidParameterError(f"aggregation must be secure or trusted, got "
                                        f"{self.aggregation!r}")
        if self.min_honest is not None and self.aggregation == "trusted":
            raise InvalidParameterError("min_honest applies to aggregation=secure only")
        if self.shares not in ("summed", "per-client"):
            raise InvalidParameterError(f"shares must be summed or per-client, got "
                                        f"{self.shares!r}")

    @property
    def n_steps(self) -> int:
        """The ALS steps this config runs (:func:`~.plan.n_steps`)."""
        from dprec.systems.dpals.plan import n_steps
        return n_steps(self)

    @property
    def items_bound(self) -> int:
        """M: the most items one user contributes statistics to (capped at the number of
        items where it is used; :func:`~.plan.items_bound`)."""
        from dprec.systems.dpals.plan import items_bound
        return items_bound(self)

    @property
    def uses_counts(self) -> bool:
        """Whether the run releases DP item counts first (:func:`~.frequency.uses_counts`)."""
        from dprec.systems.dpals.frequency import uses_counts
        return uses_counts(self)
