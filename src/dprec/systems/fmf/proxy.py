"""The services proxy's check of FMF-LDP ``cells=assigned`` (issue 26 §1).

The proxy holds the cells key (``token_u = HMAC-SHA256(key, id_u)``,
:func:`~dprec.systems.fmf.cells.client_tokens`), fetches each round's broadcast V from the
server, and admits an upload only if its k cells are
:func:`~dprec.systems.fmf.cells.assigned_cells` of ``round_seed(V)`` and the sender's token
(422 otherwise): the check :class:`~dprec.systems.fmf.cells.CellCheckingProxy` makes in
process, per submission instead of per batch. Batches are shuffled as without the check.

The key is the operator's, and only the operator's: ``POST /v1/secret`` (a simulation hands
the key its in-process run draws, so both runs assign the same cells; an operator draws 32
random bytes, e.g. ``python -c "import secrets; print(secrets.token_hex(32))"``). Until it
is held, the proxy is not ready: a device's token request and every upload are answered
503 (:class:`~dprec.protocol.deployment.SecretNotReady`, retry later), and nothing draws a
key of its own, so a client that asks first cannot fix a key the operator's would then be
refused for (issue 31 §4). Kept in the state folder (read, and checked, when the proxy
starts), so a restarted proxy checks with the same key. The server never sees it. A device
asks for its own token by ``GET /v1/client/secret`` (authenticated as for its uploads;
:meth:`AssignedCellsRelay.client_secret`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from dprec.errors import DprecError
from dprec.protocol.deployment import ProxySecrets, SecretNotReady
from dprec.protocol.messages import ItemMatrix64, Message, MessageError
from dprec.protocol.secure_sum.published import hex_key
from dprec.random import secure_generator
from dprec.systems.fmf.cells import assigned_cells, client_tokens, round_seed

__all__ = ["KEY_FILE", "AssignedCellsRelay"]

KEY_FILE = "fmf-cells.key"
"""The cells key's file in the proxy's state folder (32 bytes, mode 0600)."""
_KEY_BYTES = 32


class AssignedCellsRelay(ProxySecrets):
    """The service proxy's part of ``cells=assigned``: the key, the check of every upload
    against the round's broadcast, and the usual shuffle of each batch."""

    needs_broadcast = True

    def __init__(self, info: Any, state_dir: Path) -> None:
        self.info = info
        self.path = Path(state_dir) / KEY_FILE
        self._seeds: dict[int, bytes] = {}
        self._key: bytes | None = self._held()  # a corrupt key file is refused at start

    def published(self) -> dict[str, Any]:
        return {"cells": "assigned"}

    def _held(self) -> bytes | None:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return None
        if len(raw) != _KEY_BYTES:  # the file's name only: this may reach a client
            raise DprecError(f"{KEY_FILE} in the proxy's state folder does not hold a "
                             f"{_KEY_BYTES}-byte cells key; restore it from a backup")
        return raw

    def _store(self, key: bytes) -> bytes:
        """Write ``key`` unless a key is held already; the key held."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            held = self._held()
            assert held is not None
            return held
        with os.fdopen(fd, "wb") as f:
            f.write(key)
            f.flush()
            os.fsync(f.fileno())
        return key

    def key(self) -> bytes:
        """The operator's cells key; :class:`SecretNotReady` until it is held."""
        if self._key is None:
            self._key = self._held()
        if self._key is None:
            raise SecretNotReady("the proxy is not ready: it does not hold the operator's "
                                 "cells key yet (POST /v1/secret); retry later")
        return self._key

    def adopt(self, doc: Mapping[str, Any]) -> None:
        key = hex_key(doc.get("cells_key"), _KEY_BYTES,
                      f"cells_key must be {_KEY_BYTES} bytes in hex")
        held = self._store(key)
        if held != key:
            raise DprecError("this proxy already holds another cells key (it may have "
                             "checked uploads with it): keep giving that key, or start the "
                             "proxy on a fresh --state")
        self._key = held

    def client_secret(self, client_id: int) -> dict[str, Any]:
        """``{"cells_token": hex}``: token_u of the authenticated client u (``GET
        /v1/client/secret``), all a device needs, with the round's broadcast, to compute its
        cells. It is u's own: it says nothing of another client's cells."""
        (token,) = client_tokens(self.key(), np.array([client_id]))
        return {"cells_token": token.hex()}

    def see_broadcast(self, round: int, body: bytes) -> None:
        V = ItemMatrix64.from_bytes(body).check_for(self.info.n_items, self.info.n_factors)
        self._seeds = {round: round_seed(V.matrix)}

    def admit(self, message: Message, round: int) -> None:
        seed = self._seeds.get(round)
        if seed is None:
            raise MessageError(f"the proxy has not read round {round}'s broadcast; retry")
        items, factors = assigned_cells(
            seed, client_tokens(self.key(), np.array([message.client_id])),  # type: ignore[attr-defined]
            int(self.info.k), int(self.info.n_items), int(self.info.n_factors))
        if not (np.array_equal(message.items, items[0])  # type: ignore[attr-defined]
                and np.array_equal(message.factors, factors[0])):  # type: ignore[attr-defined]
            raise MessageError("the reports' cells are not the ones assigned to this client "
                               "this round (cells=assigned: SHAKE-256 of the round's seed and "
                               "the client's token)")

    def release(self, rows: list[bytes], round: int, threshold: int) -> bytes:
        """The rows shuffled as without the check (canonical order, CSPRNG permutation)."""
        return self.info.deployment.shuffle(rows, self.info, secure_generator(), threshold)
