"""dp-fedavg server (untrusted with secure aggregation): unscale the noisy integer sum, divide
by the expected number of contributors, descend (McMahan et al. ICLR 2018, Alg. 1 with the
fixed-denominator estimator ``sum / (q N)``; FCF's step, :func:`dprec.systems.fmf.server.
descend`).

With secure aggregation it publishes its X25519 public key (from the OS CSPRNG) with the
item factors (:class:`~.messages.FedAvgModel`) and takes each round's ONE batch: the
in-process proxy's exact sum, or the service proxy's secure-sum release, which it opens and
sums mod q; it refuses a sum of fewer than ``min_honest`` clients (their shares would carry
less noise than the calibration assumes).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from dprec.protocol.secure_sum.curator import Curator
from dprec.protocol.secure_sum.errors import SecureSumError
from dprec.protocol.secure_sum.params import SecureSumParams
from dprec.protocol.secure_sum.sealed import KeyPair
from dprec.protocol.secure_sum.server_role import SecureSumRole
from dprec.protocol.secure_sum.vdaf.contribution import ContributionCheck
from dprec.random import is_secure
from dprec.systems.dp_fedavg.messages import FedAvgModel
from dprec.systems.fmf.server import FactorServer

__all__ = ["FedAvgServer"]


class FedAvgServer(SecureSumRole, FactorServer):
    """FCF's :class:`~dprec.systems.fmf.server.FactorServer` (start, descent) with the round's
    estimate ``G = S / (gamma q N)`` from the integer sum ``S``.

    ``curator_mu``: a trusted curator (aggregation=trusted,
    :class:`~dprec.protocol.secure_sum.curator.Curator`) adds one ``Sk(curator_mu)`` draw
    to the exact sum, from its own generator; None with secure aggregation (the clients'
    shares are already in the sum; the server then has a key pair). ``params``: the secure
    sum's parameters (to open a service proxy's release); ``min_honest``: the fewest clients
    a round may sum; ``n_clients``: the clients enrolled (default: the expected
    contributors, rounded); ``check``: with ``validity=prio3``, every round's Prio3
    check."""

    label = "dp-fedavg's"

    def __init__(self, n_items: int, factors: int, lr: float, reg: float, steps: int,
                 init_scale: float, gamma: float, expected_contributors: float,
                 curator_mu: float | None = None, params: SecureSumParams | None = None,
                 min_honest: int = 1, n_clients: int | None = None,
                 check: ContributionCheck | None = None) -> None:
        super().__init__(n_items, factors, lr, reg, steps, 1.0, init_scale, None)
        self.gamma = gamma
        self.expected = expected_contributors
        self.curator = None if curator_mu is None else Curator(curator_mu)
        self.params = params
        self.check = check
        """``validity=prio3``: the check every round's proofs are verified against (jointly
        with the proxy; the server is Prio3's Leader); None: no proofs."""
        self.min_honest = int(min_honest)
        self.n_clients = int(round(expected_contributors) if n_clients is None else n_clients)
        self.keys: KeyPair | None = None
        self.contributors = 0
        self.sum_length = n_items * factors
        """Coordinates of the clients' integer vectors (N F), for a sharded run's sums."""

    def round_params(self, round: int) -> SecureSumParams:
        if self.params is None:
            raise SecureSumError("a dp-fedavg server without secure aggregation opens no "
                                 "secure sum")
        return self.params

    def round_check(self, round: int) -> ContributionCheck | None:
        return self.check

    def start(self, rng: np.random.Generator) -> FedAvgModel:
        """The initial item factors; with secure aggregation the key pair (OS CSPRNG, never
        ``rng``); with a curator, its generator (:meth:`Curator.start`). A simulation draws
        the curator's seed from ``rng`` either way (dp-fedavg's secure runs always drew it;
        skipping it would move every later draw and change their numbers)."""
        V = super().start(rng)
        if self.curator is not None:
            self.start_curator(rng)
            return self._model(V)
        self.new_keys()
        if not is_secure(rng):
            rng.integers(2 ** 63)
        return self._model(V)

    def _model(self, V: np.ndarray) -> FedAvgModel:
        return FedAvgModel(b"" if self.keys is None else self.keys.public, V, self.contributors)

    def restore(self, private: bytes, model: FedAvgModel) -> None:
        """The key and the model a restarted server had published."""
        super().restore(private, model)
        self.V = np.array(model.factors_matrix, dtype=np.float64)
        self.contributors = int(model.contributors)

    def aggregate(self, batches: Iterable[object], round: int) -> FedAvgModel | None:
        assert self.V is not None
        total = self.released_sum(batches, round, self.V.size)
        if total is None:
            return None
        mean = (total / (self.gamma * self.expected)).reshape(self.V.shape)
        return self._model(self._descend(mean))
