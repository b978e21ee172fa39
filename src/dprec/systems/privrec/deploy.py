"""PrivRec and DP-PrivRec as services, the device-safe half: each round the server selects M
clients and broadcasts theta_0; each selected client uploads its update with its id; the
proxy relays them (no anonymity threshold) to the server, which aggregates them in the
selection order (:mod:`dprec.protocol.deployment`).

Threat model as in process (``system.THREAT_MODEL``): the server is a trusted aggregator. It
selected the round's clients and sees each one's update in the clear (its role says so:
``ReptileServer.trusted_aggregator``); DP-PrivRec's Gaussian noise, added by that server,
protects a user against everyone who sees the released models, not against the server. The
proxy only relays, so the privacy report is the in-process one.

The network's size is public (the config's ``n_params``, from the simulation's model); the
initial model and the enrolled clients travel with the start
(:meth:`~dprec.protocol.deployment.Serving.initial_state`).

The device half (:mod:`dprec.systems.privrec.device`): a selected device trains on its own
ratings and side features (``DeviceClient.report(history, features=...)``) with the
simulation's step, and its report is ``trusted_aggregator``: a device policy refuses it
unless it sets ``trust_aggregator`` (issue 32 §3). Over the services the simulated clients
draw as devices (:attr:`PrivRecDeployment.device_randomness`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from dprec.errors import DprecError
from dprec.protocol.deployment import Deployment, DeviceReader
from dprec.protocol.messages import Message, MessageError
from dprec.systems.privrec import device
from dprec.systems.privrec.config import PrivRecConfig
from dprec.systems.privrec.messages import UpdateBatch, UpdateUpload

__all__ = ["DEPLOYMENT", "PrivRecDeployment"]


class PrivRecDeployment(Deployment):
    """The federated Reptile variants: ``privrec``, ``dp-privrec`` (and ``fofl-self``,
    ``nn-self``, which share the protocol); not ``privrec-cen`` (no protocol)."""

    name = "privrec"
    noisy: tuple[str, ...] = ()
    default_mechanisms: frozenset[str] = frozenset()
    """No local mechanism: DP-PrivRec's noise is the server's."""
    artefacts = ("model",)
    broadcast_artefact = "model"
    config_class = PrivRecConfig
    device_randomness = True
    """A device's negative sampling and epoch orders are its own CSPRNG's: over the services
    the simulated clients draw as devices (and the server from its own CSPRNG), so the
    numbers differ from the seeded in-process run; the privacy and the parameters do not."""

    def validate(self, config: PrivRecConfig) -> None:
        """A federated config whose network size is stated."""
        if config.algorithm == "central":
            raise DprecError("privrec-cen trains centrally: it has no protocol to run as "
                             "services (privrec, dp-privrec, fofl-self and nn-self do)")
        if config.n_params is None:
            raise DprecError("a PrivRec server needs the network's size, public with the "
                             "protocol: --param n_params=P (a simulation sets it)")

    def rounds(self, config: PrivRecConfig) -> int:
        return int(config.rounds)

    def upload(self, config: PrivRecConfig) -> type[Message]:
        return UpdateUpload

    def forward(self, config: PrivRecConfig) -> type[Message]:
        return UpdateBatch

    def mechanism(self, config: PrivRecConfig) -> None:
        """None: a client adds no noise (DP-PrivRec's server does)."""
        return None

    def upload_size(self, info: Any) -> int:
        return UpdateUpload.serialized_size(int(info.config.n_params))

    def batch_bytes(self, info: Any, senders: int) -> int:
        return UpdateBatch.serialized_size(senders, int(info.config.n_params))

    def check_upload(self, message: Message, info: Any) -> None:
        assert isinstance(message, UpdateUpload)
        n = int(info.config.n_params)
        if message.delta.size != n:
            raise MessageError(f"an update must have n_params = {n} entries, got "
                               f"{message.delta.size}")

    def check_forwarded(self, message: Message, info: Any) -> None:
        assert isinstance(message, UpdateBatch)
        n, m = int(info.config.n_params), int(info.config.clients_per_round)
        if len(message) == 0:
            raise MessageError("a batch must hold at least one update")
        if message.n_params != n:
            raise MessageError(f"updates must have n_params = {n} entries, got "
                               f"{message.n_params}")
        if len(message) > m:
            raise MessageError(f"a round has at most clients_per_round = {m} updates, got "
                               f"{len(message)}")

    def shuffle(self, rows: list[bytes], info: Any, rng: np.random.Generator,
                threshold: int) -> bytes:
        """The uploads in client order: the sender travels with its update (the server
        selected it), so this canonical order is the batch (a permutation would hide
        nothing)."""
        ups = sorted((UpdateUpload.from_bytes(r) for r in rows), key=lambda u: u.client_id)
        n = int(info.config.n_params)
        return UpdateBatch(np.array([u.client_id for u in ups], np.int64),
                           np.stack([u.delta for u in ups]) if ups else np.zeros((0, n),
                                                                                 np.float32),
                           np.array([u.unclipped for u in ups], np.uint8)).to_bytes()

    def client_messages(self, message: Any, first_id: int) -> Iterator[tuple[int, bytes]]:
        """One upload per client of the batch, under the client's own id."""
        if not isinstance(message, UpdateBatch):
            raise DprecError(f"{type(message).__name__} is not a PrivRec update batch")
        for up in message.uploads():
            yield up.client_id, up.to_bytes()

    # -- the device (:mod:`dprec.systems.privrec.device`) --------------------------------

    def terms(self, read: DeviceReader, info: Any) -> dict[str, Any]:
        return device.read_terms(read, info)

    def build_mechanism(self, mechanism: str, epsilon: float | None) -> Any:
        raise DprecError("PrivRec's clients add no noise (DP-PrivRec's is the trusted "
                         "aggregator's): there is no local mechanism to build")

    def with_side_features(self, terms: Any, features: Any) -> Any:
        """The user's side features and the item catalogue, checked against the protocol's
        network (:func:`~dprec.systems.privrec.device.checked_features`)."""
        return device.checked_features(terms, features)

    def client_step(self, terms: Any, history: Any, round: int, rng: np.random.Generator,
                    client_id: int, artefact: Callable[[], Any]) -> bytes | None:
        """The simulation's local training on a population of one; None when the round's
        broadcast did not select this device."""
        return device.client_upload(terms, history, round, rng, client_id, artefact)

    def decode_artefact(self, terms: Any, body: bytes) -> Any:
        return device.decode_model(terms, body)

    def scores(self, terms: Any, history: Any, artefact: Any) -> np.ndarray:
        """The broadcast model fine-tuned on the device's history, every item scored."""
        return device.device_scores(terms, history, artefact)


DEPLOYMENT = PrivRecDeployment()
