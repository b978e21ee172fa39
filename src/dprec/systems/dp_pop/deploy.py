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

import json
from collections.abc import Callable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.mechanisms.skellam import SkellamMechanism
from dprec.protocol.deployment import ProxySecrets
from dprec.protocol.messages import HEADER, Message, MessageError
from dprec.protocol.secure_sum.deploy import SecureSumDeployment, proved_upload
from dprec.protocol.secure_sum.device import DeviceRound
from dprec.protocol.secure_sum.errors import SecureSumError
from dprec.protocol.secure_sum.params import SecureSumParams
from dprec.protocol.secure_sum.proved import ProvedBatch, ProvedUpload
from dprec.protocol.secure_sum.sealed import OVERHEAD
from dprec.protocol.secure_sum.vdaf.contribution import ContributionCheck
from dprec.protocol.secure_sum.wire import SumRelease, SumUpload
from dprec.systems.dp_pop.calibration import (
    RoundCalibration,
    calibrate,
    check_terms,
    contribution_check,
)
from dprec.systems.dp_pop.messages import NoisyVectors, PopularityModel

__all__ = ["DEPLOYMENT", "PopDeployment", "check_of", "round_of"]

_RELEASE_HEAD = 48  # "DSR2", round u64, count u32, proxy key (32)


def round_of(info: Any) -> RoundCalibration:
    """The public numbers of ``info``'s round (its config, items and enrolled clients);
    computed once per description (the proxy asks for every upload)."""
    return _round(json.dumps(info.config, sort_keys=True), int(info.n_items))


@lru_cache(maxsize=16)
def _round(config: str, n_items: int) -> RoundCalibration:
    cfg = json.loads(config)
    return calibrate(cfg, n_items, int(cfg["n_clients"]))


def _params(info: Any) -> SecureSumParams:
    return round_of(info).params


def check_of(info: Any) -> ContributionCheck | None:
    """``info``'s validity check (None: ``validity = none``), computed once per config."""
    return _check(json.dumps(info.config, sort_keys=True), int(info.n_items))


@lru_cache(maxsize=16)
def _check(config: str, n_items: int) -> ContributionCheck | None:
    cfg = json.loads(config)
    return contribution_check(cfg, n_items, int(cfg["n_clients"]))


class PopDeployment(SecureSumDeployment):
    """dp-pop with ``aggregation = secure``."""

    name = "dp_pop"
    package = "dprec.systems.dp_pop"
    label = "dp-pop"
    block_type = NoisyVectors

    def accepts(self, config: Mapping[str, Any]) -> bool:
        return {"k", "sampling", "min_honest", "aggregation"} <= set(config)

    def mechanism(self, config: Mapping[str, Any]) -> SkellamMechanism:
        """Each client's noise share ``Sk(mu / min_honest)``, for k at most the item count
        (:func:`round_of` caps k at the item count)."""
        n = int(config["n_clients"])
        return calibrate(config, max(int(config["k"]), 1), n).share

    def round_params(self, info: Any, data: bytes) -> SecureSumParams:
        return _params(info)

    def all_params(self, info: Any) -> list[SecureSumParams]:
        return [_params(info)]

    def proxy_secrets(self, info: Any, state_dir: Path) -> ProxySecrets:
        from dprec.protocol.secure_sum.relay import SecureSumRelay, broadcast_key
        from dprec.systems.dp_pop.proved_relay import ProvedRelay  # the proxy's code, lazily

        cal, check = round_of(info), check_of(info)
        if check is not None:
            return ProvedRelay(check, cal.params, state_dir, cal.min_honest, cal.n_clients,
                               broadcast_key)
        return SecureSumRelay(cal.params, state_dir, cal.min_honest, cal.n_clients)

    # -- with validity=prio3 every upload is a proved one (protocol/secure_sum/proved.py) ---

    def upload_size(self, info: Any) -> int:
        check = check_of(info)
        return super().upload_size(info) if check is None else \
            HEADER.size + ProvedUpload.size(check)

    def batch_bytes(self, info: Any, senders: int) -> int:
        check = check_of(info)
        if check is None:
            return super().batch_bytes(info, senders)
        return (HEADER.size + _RELEASE_HEAD + OVERHEAD + 32 + 8 * int(info.n_items)
                + senders * sum(ProvedBatch.item_sizes(check)))

    def check_upload(self, message: Message, info: Any) -> None:
        check = check_of(info)
        if check is None:
            return super().check_upload(message, info)
        assert isinstance(message, SumUpload)
        try:
            ProvedUpload.from_bytes(message.data, check)
        except SecureSumError as e:
            raise MessageError(str(e)) from None

    def check_forwarded(self, message: Message, info: Any) -> None:
        check = check_of(info)
        if check is None:
            return super().check_forwarded(message, info)
        assert isinstance(message, SumRelease)
        try:
            ProvedBatch.from_bytes(message.data, check)
        except SecureSumError as e:
            raise MessageError(str(e)) from None

    def device_upload_bytes(self, settings: Mapping[str, Any], n_items: int, round: int
                            ) -> int:
        check = _check(json.dumps(dict(settings), sort_keys=True), int(n_items))
        return super().device_upload_bytes(settings, n_items, round) if check is None \
            else ProvedUpload.size(check)

    def client_step(self, terms: Any, history: Any, round: int, rng: np.random.Generator,
                    client_id: int, artefact: Callable[[], Any]) -> bytes:
        """With ``validity = prio3``: the k-hot row ``v``, plus the truncated share ``z``
        from ``rng`` (redrawn until ``|z_j| <= T``, ``|sum z| <= S``, ``||v + z||^2 <= B^2``:
        :func:`~dprec.protocol.secure_sum.vdaf.noise_bounds.truncated_noise_share`), proved
        and sealed (:func:`~dprec.protocol.secure_sum.proved.prove_and_seal`). The check is
        computed here from the checked config, never taken from a server."""
        check = _check(json.dumps(dict(terms.settings), sort_keys=True), int(terms.n_items))
        if check is None:
            return super().client_step(terms, history, round, rng, client_id, artefact)
        if round != 0:
            raise DprecError(f"dp-pop has one round, got round {round}")
        mine = {"kind": "prio3", **check_terms(check)}
        theirs = dict(getattr(terms, "proxy_published", {}) or {}).get("validity")
        if theirs != mine:
            raise SecureSumError(f"the proxy publishes the validity check {theirs!r}, this "
                                 f"device computes {mine!r} from the config: refused (its "
                                 "upload would not verify, or the check is not the config's)")
        model = artefact()
        x = self.device_vector(terms, sp.csr_matrix(history), round, rng, model, client_id)
        return proved_upload(check, terms.proxy_key, model.server_key, x, round, rng)

    # -- the device: a k-hot row, one segment Sk(mu / min_honest) ---------------------------

    def device_round(self, settings: Mapping[str, Any], n_items: int, round: int
                     ) -> DeviceRound:
        if round != 0:
            raise DprecError(f"dp-pop has one round, got round {round}")
        cal = _round(json.dumps(dict(settings), sort_keys=True), int(n_items))
        return DeviceRound(cal.params, ((int(n_items), cal.share.mu),))

    def model_type(self) -> type[Message]:
        return PopularityModel

    def largest_model(self, settings: Mapping[str, Any], n_items: int) -> int:
        return PopularityModel(bytes(32), np.zeros(int(n_items), np.int64)).nbytes

    def check_model(self, terms: Any, model: Any) -> None:
        if model.counts.size not in (0, terms.n_items):
            raise DprecError(f"the model must hold no counts (before the round) or "
                             f"{terms.n_items}, got {model.counts.size}")

    def device_vector(self, terms: Any, history: sp.csr_matrix, round: int,
                      rng: np.random.Generator, model: Any, client_id: int) -> np.ndarray:
        """The k-hot row of the device's items: k of them uniformly from ``rng``, or
        (``sampling=recency``) the k with the largest values of ``history`` (the device's
        interaction times), ties by the smaller item id."""
        k = int(terms.settings["k"])
        items, values = history.indices.astype(np.int64), history.data
        if items.size > k:
            if terms.settings["sampling"] == "recency":
                items = items[np.lexsort((items, -values))[:k]]
            else:
                items = rng.choice(items, k, replace=False)
        out = np.zeros(terms.n_items)
        out[items] = 1.0
        return out

    def scores(self, terms: Any, history: Any, artefact: Any) -> np.ndarray:
        """The published noisy counts (popularity: the same for every user)."""
        if artefact.counts.size != terms.n_items:
            raise DprecError("dp-pop has published no counts yet (its round is open)")
        return artefact.counts.astype(np.float64)


DEPLOYMENT = PopDeployment()
