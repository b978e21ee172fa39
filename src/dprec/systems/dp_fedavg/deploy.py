"""dp-fedavg (aggregation=secure) as services, the device-safe half: every round is one
cryptographic secure sum (:mod:`dprec.protocol.secure_sum`) through the shuffling proxy, as
for dp-pop and dpals (the layer's :class:`~dprec.protocol.secure_sum.deploy.SecureSumDeployment`):

- each client uploads ONE :class:`~dprec.protocol.secure_sum.wire.SumUpload` per round: its
  quantised clipped item gradient (zeros if its own coin did not sample it) plus its Skellam
  share, split into a mask seed sealed to the proxy and a share sealed to the server; the
  round id is bound into both boxes. Every client uploads every round, so the server cannot
  tell who was sampled;
- the proxy (the layer's :class:`~dprec.protocol.secure_sum.relay.SecureSumRelay`: every round has
  the same parameters, :mod:`.plan`) opens only the seeds and at the close releases ONE
  shuffled batch once ``min_honest`` distinct senders uploaded;
- the server opens and sums it mod q, takes FCF's descent step (:mod:`.serve`) and
  broadcasts the new item factors with its key (:class:`~.messages.FedAvgModel`), which
  every client checks (shape, finite, a key) before it solves its own vector from them.

The same descriptor runs the sharded backends (``dprec run --backend local|ray``: the
clients' integer vectors summed exactly, what the secure sum yields).

Threat model: the server and the proxy do not collude; the guarantee holds while at least
``min_honest`` clients are honest and upload (docs/secure_sum.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.protocol.deployment import DeviceReader
from dprec.protocol.messages import Message
from dprec.protocol.secure_sum.deploy import SecureSumDeployment
from dprec.protocol.secure_sum.device import DeviceRound
from dprec.protocol.secure_sum.params import SecureSumParams
from dprec.protocol.secure_sum.vdaf.contribution import ContributionCheck
from dprec.protocol.secure_sum.wire import ClientBlock
from dprec.systems.dp_fedavg.client import check_model
from dprec.systems.dp_fedavg.config import DpFedAvgConfig
from dprec.systems.dp_fedavg.device import clipped_update
from dprec.systems.dp_fedavg.messages import FedAvgModel
from dprec.systems.dp_fedavg.plan import plan_of, update_check
from dprec.systems.fmf.client import user_vectors

__all__ = ["DEPLOYMENT", "FedAvgDeployment"]


def _params(info: Any) -> SecureSumParams:
    """Every round's secure-sum parameters (validated configs are secure: they have some)."""
    params = plan_of(info.config, int(info.n_items), int(info.config.n_clients)).params
    assert params is not None
    return params


class FedAvgDeployment(SecureSumDeployment):
    """dp-fedavg with ``aggregation = secure``: ``rounds`` secure-sum rounds, all with the
    same parameters."""

    name = "dp_fedavg"
    label = "dp-fedavg"
    config_class = DpFedAvgConfig
    block_type = ClientBlock

    def rounds(self, config: DpFedAvgConfig) -> int:
        return int(config.rounds)

    def n_factors(self, config: DpFedAvgConfig) -> int | None:
        return int(config.factors)

    def mechanism(self, config: DpFedAvgConfig) -> None:
        """None here: each client's share ``Sk(mu / min_honest)`` depends on the item count
        (``mu`` is calibrated for ``N F`` coordinates), which the plan of the description
        gives (:func:`~dprec.systems.dp_fedavg.plan.plan_of`)."""
        return None

    def round_params(self, info: Any, data: bytes) -> SecureSumParams:
        return _params(info)

    def all_params(self, info: Any) -> list[SecureSumParams]:
        return [_params(info)]

    def relay_terms(self, info: Any) -> tuple[Any, int, int]:
        plan = plan_of(info.config, int(info.n_items), int(info.config.n_clients))
        assert plan.min_honest is not None
        return _params(info), plan.min_honest, plan.n_clients

    def round_check(self, settings: DpFedAvgConfig, n_items: int, round: int
                    ) -> ContributionCheck | None:
        """``validity = prio3`` (the default): every round's update proves each coordinate
        within ``C + T`` and ``||y||^2 <= B^2`` (:func:`~.plan.update_check`); the same
        check each round."""
        if settings.validity != "prio3":
            return None
        plan = plan_of(settings, int(n_items), int(settings.n_clients))
        return update_check(plan, float(settings.clip))

    # -- the device: the clipped update of its own history, one segment Sk(mu / t) ---------

    def read_sizes(self, read: DeviceReader) -> None:
        read.integer("factors", "max_factors")

    def device_round(self, settings: DpFedAvgConfig, n_items: int, round: int
                     ) -> DeviceRound:
        if not 0 <= round < int(settings.rounds):
            raise DprecError(f"dp-fedavg runs {settings.rounds} rounds, got round {round}")
        plan = plan_of(settings, int(n_items), int(settings.n_clients))
        if plan.params is None or plan.share_mu is None:
            raise DprecError("dp-fedavg deploys with aggregation=secure only")
        return DeviceRound(plan.params, ((plan.dimension, plan.share_mu),))

    def model_type(self) -> type[Message]:
        return FedAvgModel

    def largest_model(self, settings: DpFedAvgConfig, n_items: int) -> int:
        f = int(settings.factors)
        return FedAvgModel(bytes(32), np.zeros((int(n_items), f))).nbytes

    def check_model(self, terms: Any, model: Any) -> None:
        check_model(model, terms.n_items, int(terms.settings.factors), secure=True)

    def device_vector(self, terms: Any, history: sp.csr_matrix, round: int,
                      rng: np.random.Generator, model: Any, client_id: int) -> np.ndarray:
        """The clipped update (zeros if the device's own coin did not sample it)."""
        c = terms.settings
        x, _ = clipped_update(model.factors_matrix, history, alpha=float(c.alpha),
                              reg=float(c.reg), clip=float(c.clip),
                              rate=float(c.rate), rng=rng)
        return x

    def scores(self, terms: Any, history: Any, artefact: Any) -> np.ndarray:
        """``x_u V^T``, ``x_u`` solved on the device from the published ``V``."""
        V = artefact.factors_matrix
        c = terms.settings
        X = user_vectors(V, sp.csr_matrix(history), float(c.alpha), float(c.reg))
        return np.asarray(X @ V.T).ravel()


DEPLOYMENT = FedAvgDeployment()
