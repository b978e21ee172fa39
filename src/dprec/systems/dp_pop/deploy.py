"""dp-pop (aggregation=secure) as services, the device-safe half: one round of the
cryptographic secure sum (:mod:`dprec.protocol.secure_sum`, deployed by the layer's
:class:`~dprec.protocol.secure_sum.deploy.SecureSumDeployment`) through the shuffling proxy.
dp-pop gives its vector (a k-hot row of the device's items), its bound (the round's
calibration: q, each client's share ``Sk(mu / min_honest)``, with ``validity=prio3`` the
check each upload proves) and its model (the noisy counts).

Threat model: the server and the proxy do not collude; the guarantee holds while at least
``min_honest`` contributing clients are honest (docs/secure_sum.md).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.mechanisms.skellam import SkellamMechanism
from dprec.protocol.messages import Message
from dprec.protocol.secure_sum.deploy import SecureSumDeployment, proved_row
from dprec.protocol.secure_sum.device import DeviceRound
from dprec.protocol.secure_sum.params import SecureSumParams
from dprec.protocol.secure_sum.vdaf.contribution import ContributionCheck
from dprec.protocol.secure_sum.wire import ClientBlock
from dprec.systems.dp_pop.calibration import (
    RoundCalibration,
    calibrate,
    contribution_check,
)
from dprec.systems.dp_pop.config import DpPopConfig
from dprec.systems.dp_pop.draws import device_vector
from dprec.systems.dp_pop.messages import PopularityModel

__all__ = ["DEPLOYMENT", "PopDeployment", "check_of", "own_items", "round_of"]


def round_of(info: Any) -> RoundCalibration:
    """The public numbers of ``info``'s round (its config, items and enrolled clients);
    computed once per description (the proxy asks for every upload)."""
    return _round(info.config, int(info.n_items))


@lru_cache(maxsize=16)
def _round(config: DpPopConfig, n_items: int) -> RoundCalibration:
    return calibrate(config, n_items, int(config.n_clients))


def _params(info: Any) -> SecureSumParams:
    return round_of(info).params


def check_of(info: Any) -> ContributionCheck | None:
    """``info``'s validity check (None: ``validity = none``), computed once per config."""
    checks = DEPLOYMENT.checks(info.config, info.n_items)
    return None if checks is None else checks[0]


class PopDeployment(SecureSumDeployment):
    """dp-pop with ``aggregation = secure``."""

    name = "dp_pop"
    label = "dp-pop"
    config_class = DpPopConfig
    block_type = ClientBlock

    def mechanism(self, config: DpPopConfig) -> SkellamMechanism:
        """Each client's noise share ``Sk(mu / min_honest)``, for k at most the item count
        (:func:`round_of` caps k at the item count)."""
        return calibrate(config, max(int(config.k), 1), int(config.n_clients)).share

    def round_params(self, info: Any, data: bytes) -> SecureSumParams:
        return _params(info)

    def all_params(self, info: Any) -> list[SecureSumParams]:
        return [_params(info)]

    def relay_terms(self, info: Any) -> tuple[Any, int, int]:
        cal = round_of(info)
        return cal.params, cal.min_honest, cal.n_clients

    def round_check(self, settings: DpPopConfig, n_items: int, round: int
                    ) -> ContributionCheck | None:
        """``validity = prio3``: every upload proves ``y = v + z``, ``v`` k-hot and ``z`` a
        truncated share (:func:`~.calibration.contribution_check`)."""
        if round != 0:
            raise DprecError(f"dp-pop has one round, got round {round}")
        return contribution_check(settings, int(n_items), int(settings.n_clients))

    def client_step(self, terms: Any, history: Any, round: int, rng: np.random.Generator,
                    client_id: int, artefact: Callable[[], Any]) -> bytes:
        """As every secure sum's; with ``validity = prio3`` the device's noisy row ``y = v +
        z`` is drawn as every simulated client draws it
        (:func:`~dprec.systems.dp_pop.draws.device_vector`: its share, then k of its items,
        again until the share meets the check's truncation), then proved and sealed
        (:func:`~dprec.protocol.secure_sum.deploy.proved_row`)."""
        settings, d = terms.settings, int(terms.n_items)
        check = self.check_of_round(settings, d, round)
        if check is None:
            return super().client_step(terms, history, round, rng, client_id, artefact)
        self.check_published_validity(terms, settings, d)
        model = artefact()
        k, sampling = int(settings.k), settings.sampling
        share = _round(settings, d).share
        y = device_vector(own_items(sp.csr_matrix(history), k, sampling), d, k, sampling,
                          share, rng, check)
        return proved_row(check, terms.proxy_key, model.server_key, y, round)

    # -- the device: a k-hot row, one segment Sk(mu / min_honest) ---------------------------

    def device_round(self, settings: DpPopConfig, n_items: int, round: int
                     ) -> DeviceRound:
        if round != 0:
            raise DprecError(f"dp-pop has one round, got round {round}")
        cal = _round(settings, int(n_items))
        return DeviceRound(cal.params, ((int(n_items), cal.share.mu),))

    def model_type(self) -> type[Message]:
        return PopularityModel

    def largest_model(self, settings: DpPopConfig, n_items: int) -> int:
        return PopularityModel(bytes(32), np.zeros(int(n_items), np.int64)).nbytes

    def check_model(self, terms: Any, model: Any) -> None:
        if model.counts.size not in (0, terms.n_items):
            raise DprecError(f"the model must hold no counts (before the round) or "
                             f"{terms.n_items}, got {model.counts.size}")

    def device_vector(self, terms: Any, history: sp.csr_matrix, round: int,
                      rng: np.random.Generator, model: Any, client_id: int) -> np.ndarray:
        """The k-hot row of the device's items: k of them uniformly from ``rng``, or
        (``sampling=recency``) the k with the largest values of ``history`` (the device's
        interaction times), ties by the smaller item id (:func:`own_items`)."""
        k = int(terms.settings.k)
        items = own_items(history, k, terms.settings.sampling)
        if items.size > k:
            items = rng.choice(items, k, replace=False)
        out = np.zeros(terms.n_items)
        out[items] = 1.0
        return out

    def scores(self, terms: Any, history: Any, artefact: Any) -> np.ndarray:
        """The published noisy counts (popularity: the same for every user)."""
        if artefact.counts.size != terms.n_items:
            raise DprecError("dp-pop has published no counts yet (its round is open)")
        return artefact.counts.astype(np.float64)


def own_items(history: sp.csr_matrix, k: int, sampling: str) -> np.ndarray:
    """The device's items (``history``'s columns): all of them, or with ``sampling=recency``
    and more than ``k``, the ``k`` with the largest values (its interaction times), ties by
    the smaller item id."""
    items, values = history.indices.astype(np.int64), history.data
    if sampling == "recency" and items.size > k:
        items = items[np.lexsort((items, -values))[:k]]
    return items


DEPLOYMENT = PopDeployment()
