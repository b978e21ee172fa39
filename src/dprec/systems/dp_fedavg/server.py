"""dp-fedavg server (untrusted with secure aggregation): unscale the noisy integer sum, divide
by the expected number of contributors, descend (McMahan et al. ICLR 2018, Alg. 1 with the
fixed-denominator estimator ``sum / (q N)``; FCF's step, :func:`dprec.systems.fmf.server.
descend`)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from dprec.errors import DprecError
from dprec.mechanisms.skellam import SkellamMechanism
from dprec.random import is_secure
from dprec.systems.dp_fedavg.messages import NoisySum
from dprec.systems.fmf.server import FactorServer

__all__ = ["FedAvgServer"]


class FedAvgServer(FactorServer):
    """FCF's :class:`~dprec.systems.fmf.server.FactorServer` (start, descent) with the round's
    estimate ``G = S / (gamma q N)`` from the integer sum ``S``.

    ``curator_mu``: a trusted curator (aggregation=trusted) adds one ``Sk(curator_mu)`` draw
    to the exact sum, from its own generator; None with secure aggregation (the clients'
    shares are already in the sum)."""

    def __init__(self, n_items: int, factors: int, lr: float, reg: float, steps: int,
                 init_scale: float, gamma: float, expected_contributors: float,
                 curator_mu: float | None = None) -> None:
        super().__init__(n_items, factors, lr, reg, steps, 1.0, init_scale, None)
        self.gamma = gamma
        self.expected = expected_contributors
        self._curator = None if curator_mu is None else SkellamMechanism(curator_mu)
        self._rng: np.random.Generator | None = None
        self.sum_length = n_items * factors
        """Coordinates of the clients' integer vectors (N F), for a sharded run's sums."""

    def start(self, rng: np.random.Generator) -> np.ndarray:
        """The initial item factors; the curator's noise then draws from ``rng`` itself when
        it is the CSPRNG (a deployed server: never a seeded generator derived from it), else
        from a generator seeded from it (a simulation)."""
        V = super().start(rng)
        self._rng = rng if is_secure(rng) else np.random.default_rng(rng.integers(2 ** 63))
        return V

    def aggregate(self, batches: Iterable[object], round: int) -> np.ndarray | None:
        assert self.V is not None and self._rng is not None
        total = np.zeros(self.V.size, np.int64)
        seen = False
        for batch in batches:
            if not isinstance(batch, NoisySum):
                raise DprecError(f"dp-fedavg's server takes NoisySum uploads, got "
                                 f"{type(batch).__name__}")
            total += batch.total
            seen = True
        if not seen:
            return None
        if self._curator is not None:
            total += self._curator.noise(total.shape, self._rng)
        mean = (total / (self.gamma * self.expected)).reshape(self.V.shape)
        return self._descend(mean)
