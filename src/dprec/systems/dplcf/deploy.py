"""DPLCF as services, the device-safe half: one upload of N obfuscated bits per user, one
round, the neighbour lists as the broadcast (:mod:`dprec.protocol.deployment`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from dprec.errors import DprecError
from dprec.mechanisms.bitflip import BitFlip
from dprec.protocol.deployment import Deployment, DeviceReader
from dprec.protocol.messages import Message, MessageError
from dprec.systems.dplcf.client import local_scores, obfuscate
from dprec.systems.dplcf.config import LocalItemCFConfig
from dprec.systems.dplcf.messages import NeighbourLists, ObfuscatedBits

__all__ = ["DEPLOYMENT", "DplcfDeployment"]

_NEIGHBOURS_BASE = NeighbourLists(np.zeros((0, 0), np.int32), np.zeros((0, 0), np.float32)).nbytes


class DplcfDeployment(Deployment):
    """Every DPLCF variant (``dplcf-sp``, ``dplcf-oue``, ``lcf-sp``, ...)."""

    name = "dplcf"
    noisy = ("symmetric", "asymmetric", "oue")
    default_mechanisms = frozenset({"symmetric", "oue"})
    """The one-sided flip (p = 1) protects presence only (an uploaded 0 proves an absence),
    so a device policy must name it to accept it."""
    artefacts = ("neighbours",)
    broadcast_artefact = "neighbours"
    config_class = LocalItemCFConfig

    def upload(self, config: LocalItemCFConfig) -> type[Message]:
        return ObfuscatedBits

    def forward(self, config: LocalItemCFConfig) -> type[Message]:
        return ObfuscatedBits

    def mechanism(self, config: LocalItemCFConfig) -> BitFlip | None:
        return config.mechanism()

    def upload_size(self, info: Any) -> int:
        return self.batch_bytes(info, 1)

    def batch_bytes(self, info: Any, senders: int) -> int:
        """One packed row of N bits per sender."""
        return 6 + 8 + senders * ((info.n_items + 7) // 8)

    def check_upload(self, message: Message, info: Any) -> None:
        assert isinstance(message, ObfuscatedBits)
        if message.n_clients != 1:
            raise MessageError(f"a client uploads one vector, got {message.n_clients}")
        if message.n_items != info.n_items:
            raise MessageError(f"an upload must have n_items = {info.n_items}, got "
                               f"{message.n_items}")

    def check_forwarded(self, message: Message, info: Any) -> None:
        assert isinstance(message, ObfuscatedBits)
        if message.n_items != info.n_items:
            raise MessageError(f"a batch must have n_items = {info.n_items}, got "
                               f"{message.n_items}")
        if message.n_clients == 0:
            raise MessageError("a batch must hold at least one upload")

    def shuffle(self, rows: list[bytes], info: Any, rng: np.random.Generator,
                threshold: int) -> bytes:
        """The uploads sorted, then permuted."""
        packed = np.concatenate([ObfuscatedBits.from_bytes(r).packed for r in rows])
        order = np.lexsort(packed.T[::-1]) if packed.shape[1] else np.arange(len(rows))
        packed = packed[order][rng.permutation(len(rows))]
        return ObfuscatedBits(packed, info.n_items).to_bytes()

    def client_messages(self, message: Any, first_id: int) -> Iterator[tuple[int, bytes]]:
        if not isinstance(message, ObfuscatedBits):
            raise DprecError(f"{type(message).__name__} is not a wire message: this system "
                             "runs in process only")
        for i in range(message.n_clients):
            yield first_id + i, ObfuscatedBits(message.packed[i:i + 1], message.n_items
                                               ).to_bytes()

    # -- the device -------------------------------------------------------------------------

    def terms(self, read: DeviceReader, info: Any) -> dict[str, Any]:
        n = info.n_items
        flip = read.choice("flip", ("none", *self.noisy))
        eps = None if flip == "none" else read.real("epsilon", positive=True)
        k = read.integer("neighbours", "max_neighbours")
        hood = read.choice("neighbourhood", ("item", "user"))
        wire_k = min(k, n - 1)
        size = _NEIGHBOURS_BASE + 8 * n * wire_k + (4 * n * n if hood == "user" else 0)
        what = (f"{n} neighbour lists of {wire_k}"
                + (f" and the {n} x {n} similarity matrix" if hood == "user" else ""))
        return {"rounds": 1, "mechanism": flip, "epsilon": eps, "count": n,
                "message_bytes": info.upload_size(), "artefact": "neighbours",
                "artefact_bytes": size, "artefact_what": what, "neighbours": k,
                "neighbourhood": hood}

    def build_mechanism(self, mechanism: str, epsilon: float | None) -> BitFlip:
        return getattr(BitFlip, mechanism)(epsilon)  # type: ignore[no-any-return]

    def client_step(self, terms: Any, history: Any, round: int, rng: np.random.Generator,
                    client_id: int, artefact: Callable[[], Any]) -> bytes:
        return obfuscate(history, terms.build_mechanism(), rng).to_bytes()

    def decode_artefact(self, terms: Any, body: bytes) -> NeighbourLists:
        return NeighbourLists.from_bytes(body).check_for(
            terms.n_items, need_full=terms.neighbourhood == "user")

    def scores(self, terms: Any, history: Any, artefact: Any) -> np.ndarray:
        if artefact.k == 0:  # a one-item catalogue has no neighbours
            return np.zeros(terms.n_items)
        return np.asarray(local_scores(history, artefact, terms.neighbourhood,
                                       terms.neighbours)[0]).ravel()


DEPLOYMENT = DplcfDeployment()
