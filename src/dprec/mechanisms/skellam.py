"""The Skellam mechanism (Agarwal, Kairouz, Liu, NeurIPS 2021), central and distributed.

Noise ``Sk(mu) = Poisson(mu) - Poisson(mu)`` per coordinate (mean 0, variance ``2 mu``) is
added to an integer vector. Sums of independent Skellams are Skellam (the Poisson parts
add), so ``n`` clients each adding ``Sk(mu / n)`` to their own integer contribution give a
sum carrying exactly ``Sk(mu)``: the noise a trusted curator would add once. When only
``t`` of the ``n`` clients are honest, their shares alone sum to ``Sk(mu t / n)``;
:meth:`SkellamMechanism.share` calibrates for that.

The guarantee is accounted from :meth:`SkellamMechanism.dp_event` (or
:meth:`SkellamMechanism.k_hot_event`) by :class:`dprec.privacy.pld_accountant.PldAccountant`:
the exact PLD when neighbouring vectors differ by +-1 in at most k coordinates, else the RDP
bound (AKL21 Thm 3.5; :mod:`dprec.privacy.skellam`). Sampling
uses the explicit ``numpy.random.Generator`` it is given; seeded generators are for
simulation only (a deployed client passes :func:`dprec.random.secure_generator`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from dprec.errors import DprecError
from dprec.privacy.skellam import SkellamDpEvent

__all__ = ["SkellamMechanism"]


def _count(name: str, value: int) -> int:
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise DprecError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class SkellamMechanism:
    """Add ``Sk(mu)`` to every coordinate of an integer vector (variance ``2 mu``)."""

    mu: float
    """Poisson rate of each of the two parts (the noise variance is ``2 mu``)."""

    def __post_init__(self) -> None:
        try:
            mu = float(self.mu)
        except (TypeError, ValueError):
            raise DprecError(f"mu must be a number > 0, got {self.mu!r}") from None
        if not (mu > 0 and math.isfinite(mu)):
            raise DprecError(f"mu must be finite and > 0, got {self.mu}")
        object.__setattr__(self, "mu", mu)

    @property
    def variance(self) -> float:
        """``2 mu`` per coordinate."""
        return 2.0 * self.mu

    def noise(self, shape: int | tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        """``Sk(mu)`` draws of ``shape`` (int64)."""
        if not isinstance(rng, np.random.Generator):
            raise DprecError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        return (rng.poisson(self.mu, shape) - rng.poisson(self.mu, shape)).astype(np.int64)

    def __call__(self, x: ArrayLike, rng: np.random.Generator) -> np.ndarray:
        """``x + Sk(mu)`` for an integer array ``x`` (int64 out)."""
        arr = np.asarray(x)
        if arr.size and not np.issubdtype(arr.dtype, np.integer):
            raise DprecError(f"the Skellam mechanism adds noise to integers, got dtype "
                             f"{arr.dtype}; quantise first")
        return arr.astype(np.int64) + self.noise(arr.shape, rng)

    def share(self, n_clients: int, min_honest: int | None = None) -> SkellamMechanism:
        """One client's share when ``n_clients`` add noise and at least ``min_honest``
        (default all) are honest: ``Sk(mu / min_honest)``, so that any ``min_honest``
        honest shares alone sum to ``Sk(mu)`` (and all ``n`` to ``Sk(mu n / min_honest)``)."""
        n = _count("n_clients", n_clients)
        t = n if min_honest is None else _count("min_honest", min_honest)
        if t > n:
            raise DprecError(f"min_honest must be <= n_clients ({n}), got {t}")
        return SkellamMechanism(self.mu / t)

    def dp_event(self, l1_sensitivity: float, l2_sensitivity: float,
                 unit_shifts: int | None = None) -> SkellamDpEvent:
        """The accounting event of one release with these sensitivities (under the
        accountant's neighbouring relation); ``unit_shifts`` as in
        :class:`~dprec.privacy.skellam.SkellamDpEvent`."""
        return SkellamDpEvent(self.mu, float(l1_sensitivity), float(l2_sensitivity),
                              unit_shifts)

    def k_hot_event(self, k: int) -> SkellamDpEvent:
        """The event of one release where neighbouring vectors differ by +-1 in at most ``k``
        coordinates (a k-hot contribution, add/remove one user): exact PLD accounting."""
        return SkellamDpEvent.k_hot(self.mu, k)

    def describe(self) -> dict[str, object]:
        """A small record for reports."""
        return {"name": "skellam", "mu": self.mu, "variance": self.variance}
