"""FMF-LDP as services, the device-safe half: k gradient reports per user and epoch through
the shuffling proxy, the item matrix V as the broadcast (:mod:`dprec.protocol.deployment`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from dprec.errors import DprecError
from dprec.mechanisms.numeric import BinaryMechanism, PiecewiseMechanism
from dprec.protocol.batches import ReportBatch
from dprec.protocol.deployment import Deployment, DeviceReader, ProxySecrets
from dprec.protocol.messages import (
    GradientReports,
    ItemMatrix,
    ItemMatrix64,
    Message,
    MessageError,
    ShuffledReports,
    ShuffledValues,
    ValueReports,
)
from dprec.protocol.shuffler import Shuffler
from dprec.systems.fmf.cells import CELLS_TOKEN_BYTES, parse_token
from dprec.systems.fmf.client import FederatedClients, check_item_matrix, user_vectors
from dprec.systems.fmf.config import FMFConfig

__all__ = ["DEPLOYMENT", "FmfDeployment"]

_MAX_WIRE_FACTORS = 255


class FmfDeployment(Deployment):
    """FMF-LDP (FCF, ``exact=true``, sends whole gradients and runs in process only)."""

    name = "fmf"
    noisy = ("binary", "piecewise")
    default_mechanisms = frozenset({"binary", "piecewise"})
    artefacts = ("item-matrix", "item-matrix-f64")
    broadcast_artefact = "item-matrix-f64"
    config_class = FMFConfig

    def validate(self, config: FMFConfig) -> None:
        if config.exact:
            raise DprecError("FCF (exact=true) sends whole gradients, not wire messages: "
                             "it runs in process only")
        if config.mechanism not in ("binary", "piecewise", "none"):
            raise DprecError(f"mechanism must be binary, piecewise or none, got "
                             f"{config.mechanism!r}")

    def rounds(self, config: FMFConfig) -> int:
        """The epochs."""
        return int(config.epochs)

    def published_threshold(self, config: FMFConfig) -> int:
        """``shuffle_threshold``."""
        return int(config.shuffle_threshold)

    def k(self, config: FMFConfig) -> int:
        return int(config.k)

    def n_factors(self, config: FMFConfig) -> int:
        return int(config.factors)

    def upload(self, config: FMFConfig) -> type[Message]:
        return GradientReports if config.mechanism == "binary" else ValueReports

    def forward(self, config: FMFConfig) -> type[Message]:
        return ShuffledReports if config.mechanism == "binary" else ShuffledValues

    def mechanism(self, config: FMFConfig) -> BinaryMechanism | PiecewiseMechanism | None:
        if config.mechanism == "binary":
            return BinaryMechanism(config.epsilon)
        if config.mechanism == "piecewise":
            return PiecewiseMechanism(config.epsilon)
        return None

    def value_bound(self, config: FMFConfig) -> float | None:
        mech = self.mechanism(config)
        if isinstance(mech, PiecewiseMechanism):
            return mech.scale
        if mech is None:
            return 1.0  # the clipped gradient entry scaled into [-1, 1]
        return None

    def upload_size(self, info: Any) -> int:
        return int(info.upload.serialized_size(info.k))

    def batch_bytes(self, info: Any, senders: int) -> int:
        """k reports per sender."""
        return int(info.forward.serialized_size(info.k * senders))

    def _check_reports(self, message: Any, info: Any, exact_k: bool) -> None:
        if exact_k and message.k != info.k:
            raise MessageError(f"a client message must hold k = {info.k} reports, got "
                               f"{message.k}")
        if message.k and int(message.items.max()) >= info.n_items:
            raise MessageError(f"item indices must be < n_items = {info.n_items}, got "
                               f"{int(message.items.max())}")
        if message.k and int(message.factors.max()) >= info.n_factors:
            raise MessageError(f"factor indices must be < factors = {info.n_factors}, got "
                               f"{int(message.factors.max())}")
        bound = info.value_bound
        if bound is not None and message.k:
            # float32 on the wire: allow the rounding of the bound itself
            limit = float(bound) * (1.0 + 1e-6)
            worst = float(abs(message.values).max())
            if not worst <= limit or not math.isfinite(worst):
                raise MessageError(f"report values must lie in [-{bound:.6g}, {bound:.6g}] "
                                   f"(what the mechanism outputs), got |value| = {worst:.6g}")

    def check_upload(self, message: Message, info: Any) -> None:
        self._check_reports(message, info, exact_k=True)

    def check_forwarded(self, message: Message, info: Any) -> None:
        if message.k == 0:  # type: ignore[attr-defined]
            raise MessageError("a batch must hold at least one report")
        self._check_reports(message, info, exact_k=False)

    def anonymous(self, message: Message, body: bytes) -> bytes:
        """The client's reports without its id."""
        if isinstance(message, GradientReports):
            return ShuffledReports(message.items, message.factors, message.bits).to_bytes()
        assert isinstance(message, ValueReports)
        return ShuffledValues(message.items, message.factors, message.values).to_bytes()

    def shuffle(self, rows: list[bytes], info: Any, rng: np.random.Generator,
                threshold: int) -> bytes:
        """The reports through the simulation's :class:`Shuffler`."""
        msgs = [Message.from_bytes(r) for r in rows]
        items = np.stack([m.items for m in msgs])  # type: ignore[attr-defined]
        factors = np.stack([m.factors for m in msgs])  # type: ignore[attr-defined]
        shuffler = Shuffler(min(threshold, len(rows)), rng)
        ids = np.arange(len(rows))
        if isinstance(msgs[0], ShuffledReports):
            bits = np.stack([m.bits for m in msgs])  # type: ignore[attr-defined]
            shuffler.submit_batch(items, factors, bits, ids)
        else:
            values = np.stack([m.values for m in msgs])  # type: ignore[attr-defined]
            shuffler.submit_batch(items, factors, client_ids=ids, values=values)
        return shuffler.flush().to_bytes()

    def proxy_secrets(self, info: Any, state_dir: Path) -> ProxySecrets | None:
        """``cells=assigned``: the proxy checks every upload's cells
        (:class:`~dprec.systems.fmf.proxy.AssignedCellsRelay`); else it only shuffles."""
        if info.config.cells != "assigned":
            return None
        from dprec.systems.fmf.proxy import AssignedCellsRelay  # the proxy's code, lazily

        return AssignedCellsRelay(info, state_dir)

    def client_messages(self, message: Any, first_id: int) -> Iterator[tuple[int, bytes]]:
        if not isinstance(message, ReportBatch):
            raise DprecError(f"{type(message).__name__} is not a wire message: this system "
                             "runs in process only")
        for m in message.to_messages():
            yield m.client_id, m.to_bytes()

    # -- the device -------------------------------------------------------------------------

    def terms(self, read: DeviceReader, info: Any) -> dict[str, Any]:
        n = info.n_items
        cells = read.choice("cells", ("chosen", "assigned"))
        wire = ItemMatrix64 if cells == "assigned" else ItemMatrix  # assigned: V bit for bit
        mech = read.choice("mechanism", ("none", *self.noisy))
        eps = None if mech == "none" else read.real("epsilon", positive=True)
        k = read.integer("k", "max_k")
        f = read.integer("factors", "max_factors", _MAX_WIRE_FACTORS)
        rounds = read.integer("epochs", None)
        return {"rounds": rounds, "mechanism": mech, "epsilon": eps, "count": k,
                "message_bytes": info.upload.serialized_size(k),
                "artefact": "item-matrix-f64" if cells == "assigned" else "item-matrix",
                "artefact_bytes": wire.serialized_size(n, f), "cells": cells,
                "artefact_what": f"a {n} x {f} item matrix", "factors": f, "k": k,
                "alpha": read.real("alpha", positive=False),
                "regularization": read.real("regularization", positive=True),
                "clip": read.real("clip", positive=True)}

    def build_mechanism(self, mechanism: str, epsilon: float | None
                        ) -> BinaryMechanism | PiecewiseMechanism:
        cls = BinaryMechanism if mechanism == "binary" else PiecewiseMechanism
        return cls(epsilon)  # type: ignore[arg-type]

    def client_step(self, terms: Any, history: Any, round: int, rng: np.random.Generator,
                    client_id: int, artefact: Callable[[], Any]) -> bytes:
        """FMF-LDP's client role on a population of one, with the device's id; with
        ``cells=assigned`` its cells are those of ``terms.cells_token`` (the simulation's
        :func:`~dprec.systems.fmf.cells.assigned_cells`, same report law)."""
        V = check_item_matrix(artefact(), terms.n_items, terms.factors)
        tokens = None
        if terms.cells == "assigned":
            if len(terms.cells_token) != CELLS_TOKEN_BYTES:
                raise DprecError(f"cells=assigned needs the device's {CELLS_TOKEN_BYTES}-byte "
                                 f"cells token, got {len(terms.cells_token)} bytes")
            tokens = [terms.cells_token]
        role = FederatedClients(history, factors=terms.factors, alpha=terms.alpha,
                                reg=terms.regularization, k=terms.k, clip=terms.clip,
                                exact=False, mechanism=terms.build_mechanism(),
                                ledger=None, batch_size=1, cell_tokens=tokens)
        (batch,) = list(role.step(V, round, rng))
        m = batch.to_messages()[0]
        if isinstance(m, GradientReports):
            return GradientReports(client_id, m.items, m.factors, m.bits).to_bytes()
        return ValueReports(client_id, m.items, m.factors, m.values).to_bytes()

    def needs_client_secret(self, terms: Any) -> bool:
        """``cells=assigned``: the device's cells token, from the proxy."""
        return bool(terms.cells == "assigned")

    def with_client_secret(self, terms: Any, doc: Mapping[str, Any]) -> Any:
        """The terms with the proxy's cells token (32 bytes in hex, else a
        :class:`DprecError`)."""
        return replace(terms, cells_token=parse_token(doc.get("cells_token")))

    def decode_artefact(self, terms: Any, body: bytes) -> np.ndarray:
        """V, float64 here (float32 on the wire; float64 with ``cells=assigned``, whose
        round seed hashes the server's V bit for bit)."""
        wire = ItemMatrix64 if terms.artefact == "item-matrix-f64" else ItemMatrix
        m = wire.from_bytes(body).check_for(terms.n_items, terms.factors)
        return m.matrix.astype(np.float64)

    def scores(self, terms: Any, history: Any, artefact: Any) -> np.ndarray:
        x = user_vectors(artefact, history, terms.alpha, terms.regularization)
        return (x @ artefact.T)[0]


DEPLOYMENT = FmfDeployment()
