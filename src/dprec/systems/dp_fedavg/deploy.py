"""dp-fedavg's deployment descriptor, the device-safe half: which configs are dp-fedavg's and
that its server half (:mod:`.serve`) runs on the sharded backends (``dprec run --backend
local|ray``: the clients' integer vectors summed exactly, what the secure sum yields).

Its services (the cryptographic secure sum over HTTP, ``dprec simulate dp-fedavg
--transport http``) are not built yet: :meth:`FedAvgDeployment.validate` refuses every
config with that message, so no service starts and no device reads a half-made protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, NoReturn

import numpy as np

from dprec.errors import DprecError
from dprec.protocol.deployment import Deployment, DeviceReader
from dprec.protocol.messages import Message

__all__ = ["DEPLOYMENT", "FedAvgDeployment"]

_NOT_YET = ("dp-fedavg does not run as services yet (its secure sum over HTTP is not built): "
            "run it in process, or on a sharded backend with `dprec run --backend local|ray`")


def _refuse() -> NoReturn:
    raise DprecError(_NOT_YET)


class FedAvgDeployment(Deployment):
    """dp-fedavg: sharded backends now, services not yet (module docstring)."""

    name = "dp_fedavg"
    package = "dprec.systems.dp_fedavg"
    noisy = ("skellam",)
    default_mechanisms = frozenset({"skellam"})
    artefacts = ("model",)
    broadcast_artefact = "model"
    one_batch = True

    def accepts(self, config: Mapping[str, Any]) -> bool:
        """dp-fedavg's own fields (no other system's config has all of them)."""
        return {"rounds", "rate", "server_steps", "min_honest", "gamma"} <= set(config)

    def validate(self, config: Mapping[str, Any]) -> None:
        _refuse()

    def upload(self, config: Mapping[str, Any]) -> type[Message]:
        _refuse()

    def forward(self, config: Mapping[str, Any]) -> type[Message]:
        _refuse()

    def mechanism(self, config: Mapping[str, Any]) -> Any:
        _refuse()

    def upload_size(self, info: Any) -> int:
        _refuse()

    def batch_bytes(self, info: Any, senders: int) -> int:
        _refuse()

    def check_upload(self, message: Message, info: Any) -> None:
        _refuse()

    def check_forwarded(self, message: Message, info: Any) -> None:
        _refuse()

    def shuffle(self, rows: list[bytes], info: Any, rng: np.random.Generator,
                threshold: int) -> bytes:
        _refuse()

    def client_messages(self, message: Any, first_id: int) -> Iterator[tuple[int, bytes]]:
        _refuse()

    def terms(self, read: DeviceReader, info: Any) -> dict[str, Any]:
        _refuse()

    def build_mechanism(self, mechanism: str, epsilon: float | None) -> Any:
        _refuse()

    def client_step(self, terms: Any, history: Any, round: int, rng: np.random.Generator,
                    client_id: int, artefact: Callable[[], Any]) -> bytes:
        _refuse()

    def decode_artefact(self, terms: Any, body: bytes) -> Any:
        _refuse()

    def scores(self, terms: Any, history: Any, artefact: Any) -> np.ndarray:
        _refuse()


DEPLOYMENT = FedAvgDeployment()
