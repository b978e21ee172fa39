"""DPLCF client (on device): obfuscate once, then score with the true local history.

Never imports server code; shares only messages, mechanisms and the round engine.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.mechanisms.bitflip import BitFlip
from dprec.models.itemknn import (
    score_item_candidates,
    score_item_neighbourhood,
    score_user_neighbourhood,
)
from dprec.privacy.events import BitFlipDpEvent
from dprec.protocol.engine import Clients, Sent, client_ids
from dprec.systems.dplcf.messages import NeighbourLists, ObfuscatedBits

__all__ = ["ObfuscatingClients", "cap_binds", "cap_history", "displaced_bit_event",
           "local_scores", "obfuscate", "upload_events"]


def cap_history(history: sp.csr_matrix, cap: int | None, rng: np.random.Generator
                ) -> sp.csr_matrix:
    """Each row with more than ``cap`` items keeps a uniformly random ``cap`` of them (the
    items with the ``cap`` smallest of i.i.d. uniform keys drawn from ``rng``); rows within
    the cap, or ``cap=None``, are returned as they are and draw nothing from ``rng``.

    The contribution bound of issue 26 §2: with it, an honest upload has at most ``cap``
    true ones, which the server's validity range (``dplcf-range``) assumes.
    """
    csr = sp.csr_matrix(history)
    if cap is None:
        return csr
    lengths = np.diff(csr.indptr)
    over = np.flatnonzero(lengths > cap)
    if not over.size:
        return csr
    rows = np.repeat(np.arange(csr.shape[0]), lengths)
    key = np.full(csr.nnz, -1.0)
    in_over = np.isin(rows, over)
    key[in_over] = rng.random(int(in_over.sum()))
    order = np.lexsort((key, rows))  # by row, then key (kept rows: all keys -1)
    rank = np.empty(csr.nnz, np.int64)
    rank[order] = np.arange(csr.nnz) - csr.indptr[rows[order]]
    keep = rank < cap
    out = sp.csr_matrix((csr.data[keep], (rows[keep], csr.indices[keep])), shape=csr.shape)
    out.sort_indices()
    return out


def cap_binds(history: sp.csr_matrix, cap: int | None) -> np.ndarray:
    """Per row: whether the cap can bind on the row or on a neighbour of it (one
    interaction more or less), i.e. the row holds at least ``cap`` items and ``cap`` is below
    the number of items. For such a row one interaction can move two bits of the capped
    vector (:func:`displaced_bit_event`); a row at exactly ``cap`` items is one of them (its
    neighbour with one item more is cut back to ``cap``)."""
    n_rows, n_items = history.shape
    if cap is None or cap >= n_items:
        return np.zeros(n_rows, bool)
    return np.diff(history.indptr) >= cap


def displaced_bit_event(mechanism: BitFlip) -> BitFlipDpEvent:
    """The event of the bit a capped history gives up when one interaction enters it.

    With the cap binding (:func:`cap_binds`), one interaction more can move two bits of the
    capped vector: bit ``i`` goes 0 -> 1 (a presence change, ``BitFlipDpEvent(p, q)``) and
    one kept item ``j`` leaves, 1 -> 0 (an absence change): couple the two uniform subsets so
    that they differ in that swap or not at all, and the mixture's divergence is at most the
    two bits' (joint convexity). A two-sided flip's event already bounds both directions of
    a bit, so the displaced bit is a second copy of it. A one-sided flip (``p = 1``) bounds
    presence only; the absence change is the flip read on the complement bit,
    ``BitFlipDpEvent(1 - q, 1 - p)`` with ``1 - p = 0``: no finite epsilon (an observed 0 at
    ``j`` rules the smaller history out)."""
    event = mechanism.dp_event()
    if event.p < 1.0:
        return event
    return BitFlipDpEvent(1.0 - event.q, 1.0 - event.p)


def upload_events(mechanism: BitFlip, ids: np.ndarray, binds: np.ndarray, n_items: int
                  ) -> list[Sent]:
    """Who underwent which flips in one upload of the clients ``ids``.

    Every client: ``n_items`` flips of ``mechanism.dp_event()``, one per bit
    (``unit="interaction"``: one interaction reaches one bit of the vector). A client on
    whom the cap binds (``binds``, :func:`cap_binds`) has one interaction reach two bits of
    the capped vector: its bits are recorded as two records, ``n_items - 1`` flips and the
    displaced bit's event (:func:`displaced_bit_event`), so its event level composes two
    bits and its user level still ``n_items``.
    """
    event = mechanism.dp_event()
    binds = np.asarray(binds, bool)
    free, bound = ids[~binds], ids[binds]
    sent = [Sent(event, free, n_items, "interaction")] if free.size else []
    if bound.size:
        sent.append(Sent(event, bound, n_items - 1, "interaction"))
        sent.append(Sent(displaced_bit_event(mechanism), bound, 1, "interaction"))
    return sent


def obfuscate(
    history: sp.csr_matrix, mechanism: BitFlip | None, rng: np.random.Generator
) -> ObfuscatedBits:
    """Flip every bit of each client's N-bit interaction vector (docs/architecture.md §1).

    ``mechanism=None`` uploads the true vectors (the non-private LCF-UB upper bound).
    """
    if mechanism is None:
        dense = history.toarray() > 0
    else:
        dense = mechanism.obfuscate_dense(history, rng, dtype=np.uint8)
    return ObfuscatedBits.pack(dense)


class ObfuscatingClients(Clients):
    """Every client flips its N bits once and uploads them (one round; batches of clients).

    ``ids``: the global user id of each history row (default: the row index); a subset of
    the population (:meth:`subset`, the clients of one shard) keeps its users' global ids.
    ``history_cap``: each client first keeps at most that many items (:func:`cap_history`,
    drawn from the round's generator, before the flips; None: no cap).
    """

    def __init__(self, history: sp.csr_matrix, mechanism: BitFlip | None,
                 batch_size: int, ids: np.ndarray | None = None,
                 history_cap: int | None = None) -> None:
        if int(batch_size) != batch_size or batch_size < 1:
            raise DprecError(f"batch_size must be an integer >= 1, got {batch_size}")
        self._history = history
        self._mechanism = mechanism
        self._batch_size = int(batch_size)
        self._cap = history_cap
        self.ids = client_ids(ids, history.shape[0])
        self._sent: list[Sent] = []
        self.upload_bytes = 0

    def step(self, broadcast: object, round: int, rng: np.random.Generator
             ) -> Iterator[ObfuscatedBits]:
        n_users = self._history.shape[0]
        self._sent = []
        for start in range(0, n_users, self._batch_size):
            msg, sent = self.step_rows(start, min(n_users, start + self._batch_size), rng)
            self._sent.extend(sent)
            yield msg

    def step_rows(self, start: int, stop: int, rng: np.random.Generator
                  ) -> tuple[ObfuscatedBits, list[Sent]]:
        """The upload of history rows start:stop (one batch, or one block of a sharded run)
        drawn from ``rng``, and who sent what (:func:`upload_events`; empty without a
        mechanism)."""
        history = self._history[start:stop]
        rows = cap_history(history, self._cap, rng)
        msg = obfuscate(rows, self._mechanism, rng)
        self.upload_bytes += msg.packed.nbytes
        if self._mechanism is None:
            return msg, []
        return msg, upload_events(self._mechanism, self.ids[start:stop],
                                  cap_binds(history, self._cap), self._history.shape[1])

    def subset(self, rows: np.ndarray) -> ObfuscatingClients:
        """The clients of history rows ``rows`` (in that order), with their global ids."""
        rows = np.asarray(rows, np.int64)
        return ObfuscatingClients(self._history[rows], self._mechanism, self._batch_size,
                                  ids=self.ids[rows], history_cap=self._cap)

    def sent(self) -> list[Sent]:
        return list(self._sent)


def local_scores(
    history: sp.csr_matrix, neighbours: NeighbourLists, neighbourhood: str, k: int,
    items: np.ndarray | None = None,
) -> np.ndarray:
    """score(u, i) from the TRUE history; the ranking never leaves the device.

    "item": Eq. 12, sum over the item's global top-K neighbours that u interacted with.
    "user": sum of the K largest sim(i, j) over items j in u's history.
    ``items``: (b, c) candidates, scored without a sweep over every item.
    """
    if neighbourhood == "item":
        if items is not None:
            return score_item_candidates(history, neighbours.indices, neighbours.sims, items)
        return score_item_neighbourhood(history, neighbours.indices, neighbours.sims)
    if neighbours.full is None:
        raise DprecError("the user-history neighbourhood needs the full similarity broadcast")
    return score_user_neighbourhood(history, neighbours.full, k, items)
