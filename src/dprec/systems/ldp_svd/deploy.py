"""LDP-SVD (ldp-svd, laplace-svd, laplace-rr-svd) as services, the device-safe half: one
upload per user of a perturbed value per reported item, relayed with its sender (seed 001
has no anonymising proxy: the server trains a factor per user), one round, the server's
Funk SVD as the broadcast (:mod:`dprec.protocol.deployment`).

Threat model as in process (``system.THREAT_MODEL``): the untrusted server sees every
user's id with the items it reported; the proxy only relays, so the privacy report is the
in-process one (no shuffle is charged).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from dprec.errors import DprecError
from dprec.mechanisms.numeric import BinaryMechanism, PiecewiseMechanism
from dprec.protocol.deployment import Deployment, DeviceReader
from dprec.protocol.messages import Message, MessageError
from dprec.systems.ldp_svd import device
from dprec.systems.ldp_svd.client import RatingMechanism
from dprec.systems.ldp_svd.config import LaplaceRRSVDConfig, LDPSVDConfig, SVDConfig
from dprec.systems.ldp_svd.messages import RatingBatch, RatingModel, RatingReports, RatingUpload

__all__ = ["DEPLOYMENT", "RatingDeployment"]


class RatingDeployment(Deployment):
    """Every LDP rating system: ``ldp-svd`` and ``laplace-svd`` (mechanism, epsilon) and
    ``laplace-rr-svd`` (eps1, eps2)."""

    name = "ldp_svd"
    noisy = ("laplace", "duchi", "piecewise", "laplace-rr")
    default_mechanisms = frozenset({"laplace", "duchi", "piecewise"})
    """Laplace-RR sends the true rating with probability e^eps2/(1 + e^eps2) (no finite
    guarantee), so a device policy must name it to accept it."""
    artefacts = ("model",)
    broadcast_artefact = "model"
    exact_upload = False
    """An upload holds one report per rated item (and per fake): its size is the user's."""
    config_class = LDPSVDConfig

    def config_type(self, system: str) -> type:
        """Laplace-RR-SVD's own config (eps1, eps2); ldp-svd's and laplace-svd's otherwise."""
        return LaplaceRRSVDConfig if system == "laplace-rr-svd" else LDPSVDConfig

    def validate(self, config: SVDConfig) -> None:
        """The server needs what the data fixes: the users enrolled and the public scale."""
        if config.n_users is None:
            raise DprecError("an LDP-SVD server needs n_users, the users enrolled (its model "
                             "has a row per user): --param n_users=M")
        if config.rating_min is None or config.rating_max is None:
            raise DprecError("an LDP-SVD server needs the public rating scale: --param "
                             "rating_min=LOW --param rating_max=HIGH")

    def n_factors(self, config: SVDConfig) -> int:
        return int(config.factors)

    def upload(self, config: SVDConfig) -> type[Message]:
        return RatingUpload

    def forward(self, config: SVDConfig) -> type[Message]:
        return RatingBatch

    def mechanism(self, config: SVDConfig) -> RatingMechanism:
        """The config's own ``build_mechanism``."""
        return config.build_mechanism()

    def value_bound(self, config: SVDConfig) -> float | None:
        """Duchi: 1 (a sign); piecewise: C; Laplace and Laplace-RR: unbounded (None)."""
        mech = self.mechanism(config)
        if isinstance(mech, BinaryMechanism):
            return 1.0
        if isinstance(mech, PiecewiseMechanism):
            return float(mech.scale)
        return None

    def upload_size(self, info: Any) -> int:
        """At most one report per item (fakes included)."""
        return RatingUpload.serialized_size(info.n_items)

    def batch_bytes(self, info: Any, senders: int) -> int:
        return RatingBatch.serialized_size(senders * info.n_items)

    def _check_values(self, values: np.ndarray, items: np.ndarray, info: Any) -> None:
        if items.size and int(items.max()) >= info.n_items:
            raise MessageError(f"item indices must be < n_items = {info.n_items}, got "
                               f"{int(items.max())}")
        mech = info.mechanism()
        if isinstance(mech, BinaryMechanism) and values.size and not np.all(
                np.abs(values) == 1.0):
            raise MessageError("Duchi's reports must be -1 or +1")
        bound = info.value_bound
        if bound is not None and values.size and float(np.abs(values).max()) > bound:
            raise MessageError(f"report values must lie in [-{bound:.6g}, {bound:.6g}], got "
                               f"|value| = {float(np.abs(values).max()):.6g}")

    def check_upload(self, message: Message, info: Any) -> None:
        assert isinstance(message, RatingUpload)
        if message.k == 0:
            raise MessageError("an upload must hold at least one report")
        self._check_values(message.values, message.items, info)

    def check_forwarded(self, message: Message, info: Any) -> None:
        assert isinstance(message, RatingBatch)
        if len(message) == 0:
            raise MessageError("a batch must hold at least one report")
        n_users = int(info.config.n_users)
        if int(message.users.max()) >= n_users:
            raise MessageError(f"user ids must be < n_users = {n_users}, got "
                               f"{int(message.users.max())}")
        self._check_values(message.values, message.items, info)

    def shuffle(self, rows: list[bytes], info: Any, rng: np.random.Generator,
                threshold: int) -> bytes:
        """The uploads in (user, item) order: the sender travels with its reports, so this
        canonical order is the batch (a permutation would hide nothing)."""
        ups = sorted((RatingUpload.from_bytes(r) for r in rows), key=lambda u: u.client_id)
        return RatingBatch(
            np.concatenate([np.full(u.k, u.client_id, np.int64) for u in ups]),
            np.concatenate([u.items for u in ups]),
            np.concatenate([u.values for u in ups])).to_bytes()

    def client_messages(self, message: Any, first_id: int) -> Iterator[tuple[int, bytes]]:
        """One upload per user of the batch, under the user's own id."""
        if not isinstance(message, RatingReports):
            raise DprecError(f"{type(message).__name__} is not an LDP-SVD upload batch")
        ids, starts = np.unique(message.users, return_index=True)
        bounds = np.append(starts, message.users.size)
        for c, a, b in zip(ids, bounds[:-1], bounds[1:], strict=True):
            yield int(c), RatingUpload(int(c), message.items[a:b],
                                       message.values[a:b]).to_bytes()

    # -- the device (:mod:`dprec.systems.ldp_svd.device`) ---------------------------------

    def terms(self, read: DeviceReader, info: Any) -> dict[str, Any]:
        return device.read_terms(read, info)

    def build_mechanism(self, mechanism: str, epsilon: float | None) -> RatingMechanism:
        """An eps-LDP mechanism per rating; Laplace-RR is never built for a device's charge
        (its event is non-private: no epsilon covers it)."""
        if mechanism == "laplace-rr":
            raise DprecError("Laplace-RR has no finite guarantee (its event is non-private): "
                             "a device cannot be charged for it")
        return LDPSVDConfig(mechanism=mechanism, epsilon=epsilon).build_mechanism()  # type: ignore[arg-type]

    def client_step(self, terms: Any, history: Any, round: int, rng: np.random.Generator,
                    client_id: int, artefact: Callable[[], Any]) -> bytes:
        """The simulation's client step on a population of one (its ratings, perturbed once;
        ``hide_items``: with its fake reports); needs no artefact."""
        s = terms.settings  # the device's own terms (device.read_terms), not the config
        mech = (LaplaceRRSVDConfig(eps1=s["eps1"], eps2=s["eps2"]).build_mechanism()
                if "eps1" in s else self.build_mechanism(s["mechanism"], s["epsilon"]))
        return device.client_upload(terms, mech, history, rng, client_id)

    def decode_artefact(self, terms: Any, body: bytes) -> RatingModel:
        return device.decode_model(terms, body)

    def scores(self, terms: Any, history: Any, artefact: Any) -> np.ndarray:
        """Predicted ratings from the model, the device's own factor folded in on the
        device (:func:`~dprec.systems.ldp_svd.device.fold_in_scores`)."""
        return device.fold_in_scores(terms, history, artefact)


DEPLOYMENT = RatingDeployment()
