"""The shuffling proxy (FMF-LDP, SYSTEMS.md §2 step 4; DESIGN.md "proxy").

The proxy strips the sender's identity and metadata, splits each client message into
single reports, holds them, and on :meth:`Shuffler.flush` forwards them in a uniformly
random order drawn from its own generator. It keeps no mapping from report to sender:
reports are stored as a bag, and before shuffling they are put in a canonical order
(sorted by item, factor, bit), so the forwarded batch depends only on the multiset of
reports and the proxy's generator, never on who sent what or in which order.

Seeded generators are for simulation; a deployed proxy must draw its permutation from a
cryptographically secure source.
"""

from __future__ import annotations

import logging

import numpy as np

from dprec.errors import DprecError
from dprec.protocol.messages import (
    GradientReports,
    Message,
    ShuffledReports,
    ShuffledValues,
    ValueReports,
)

logger = logging.getLogger(__name__)

__all__ = ["ShuffleRefusedError", "Shuffler"]

_ITEM_SHIFT = 9  # key = item << 9 | factor << 1 | bit
_FACTOR_SHIFT = 1


class ShuffleRefusedError(DprecError):
    """The proxy holds fewer reports than its threshold and will not forward them."""


class Shuffler:
    """Anonymising, shuffling proxy.

    ``threshold``: the smallest number of reports the proxy forwards in one batch (a batch
    of one report would link it to its sender). ``rng``: the proxy's own generator.
    Counters: ``bytes_up`` (client messages received, serialised size), ``bytes_down``
    (batches forwarded), ``messages_received``, ``reports_forwarded``.
    """

    def __init__(self, threshold: int, rng: np.random.Generator) -> None:
        if int(threshold) != threshold or threshold < 1:
            raise DprecError(f"threshold must be an integer >= 1, got {threshold}")
        if not isinstance(rng, np.random.Generator):
            raise DprecError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        self.threshold = int(threshold)
        self._rng = rng
        self._keys: list[np.ndarray] = []
        self._values: list[np.ndarray] = []
        self._held = 0
        self.bytes_up = 0
        self.bytes_down = 0
        self.messages_received = 0
        self.reports_forwarded = 0

    @property
    def held(self) -> int:
        """Number of reports waiting to be forwarded."""
        return self._held

    @staticmethod
    def _encode(items: np.ndarray, factors: np.ndarray, bits: np.ndarray) -> np.ndarray:
        return (
            (items.astype(np.uint64) << np.uint64(_ITEM_SHIFT))
            | (factors.astype(np.uint64) << np.uint64(_FACTOR_SHIFT))
            | bits.astype(np.uint64)
        )

    def _hold(self, keys: np.ndarray, values: np.ndarray | None) -> None:
        if self._keys and (values is None) != (not self._values):
            raise DprecError("one batch must not mix one-bit and real-valued reports")
        self._keys.append(keys)
        if values is not None:
            self._values.append(values)
        self._held += keys.size

    def submit(self, message: GradientReports | ValueReports | bytes) -> None:
        """Accept one client's message (object or bytes): drop its id, keep its reports."""
        if isinstance(message, (bytes, bytearray, memoryview)):
            size = len(message)
            message = Message.from_bytes(message)
        elif isinstance(message, (GradientReports, ValueReports)):
            size = message.nbytes
        else:
            size = 0
        if isinstance(message, GradientReports):
            self._hold(self._encode(message.items, message.factors, message.bits), None)
        elif isinstance(message, ValueReports):
            zero = np.zeros(message.k, np.uint8)
            self._hold(self._encode(message.items, message.factors, zero), message.values)
        else:
            raise DprecError(
                "message must be GradientReports, ValueReports or bytes, got "
                f"{type(message).__name__}"
            )
        self.bytes_up += size
        self.messages_received += 1

    def submit_batch(
        self,
        items: np.ndarray,
        factors: np.ndarray,
        bits: np.ndarray | None = None,
        client_ids: np.ndarray | None = None,
        *,
        values: np.ndarray | None = None,
    ) -> None:
        """Accept many clients' messages at once (simulation path).

        ``items``, ``factors``, ``bits``: arrays of shape ``(n_clients, k)``, row ``u`` being
        client ``u``'s message (same content as :class:`GradientReports`). ``client_ids`` is
        accepted for symmetry with the message path and discarded. Byte counts are those of
        ``n_clients`` serialised :class:`GradientReports` of ``k`` reports. Real-valued
        reports pass ``values`` instead of ``bits`` (as :class:`ValueReports`).
        """
        if (bits is None) == (values is None):
            raise DprecError("pass exactly one of bits or values")
        if values is not None:
            items, factors = np.asarray(items), np.asarray(factors)
            if items.ndim != 2 or np.shape(values) != items.shape:
                raise DprecError("items, factors and values must be 2-D of equal shape")
            flat = ShuffledValues(items.ravel(), factors.ravel(), np.asarray(values).ravel())
            zero = np.zeros(flat.items.size, np.uint8)
            self._hold(self._encode(flat.items, flat.factors, zero), flat.values)
            self.bytes_up += items.shape[0] * ValueReports.serialized_size(items.shape[1])
            self.messages_received += items.shape[0]
            return
        items, factors, bits = (np.asarray(a) for a in (items, factors, bits))
        if items.ndim != 2 or items.shape != factors.shape or items.shape != bits.shape:
            raise DprecError(
                "items, factors and bits must be 2-D (n_clients x k) of equal shape, got "
                f"{items.shape}, {factors.shape}, {bits.shape}"
            )
        n_clients, k = items.shape
        if client_ids is not None and np.asarray(client_ids).shape != (n_clients,):
            raise DprecError(
                f"client_ids must have shape ({n_clients},), got {np.asarray(client_ids).shape}"
            )
        flat = ShuffledReports(items.ravel(), factors.ravel(), bits.ravel())  # validates
        self._hold(self._encode(flat.items, flat.factors, flat.bits), None)
        self.bytes_up += n_clients * GradientReports.serialized_size(k)
        self.messages_received += n_clients

    def flush(self) -> ShuffledReports | ShuffledValues:
        """Forward all held reports in a uniformly random order, or refuse.

        Raises :class:`ShuffleRefusedError` (keeping the reports) when fewer than
        ``threshold`` reports are held.
        """
        if self._held < self.threshold:
            raise ShuffleRefusedError(
                f"held reports must be >= threshold {self.threshold} to forward, got {self._held}"
            )
        keys = np.concatenate(self._keys) if len(self._keys) > 1 else self._keys[0]
        values = np.concatenate(self._values) if self._values else None
        if values is None:
            keys = np.sort(keys)  # canonical order: forget arrival order
            self._rng.shuffle(keys)
        else:
            order = np.lexsort((values, keys))
            order = order[self._rng.permutation(order.size)]
            keys, values = keys[order], values[order]
        self._keys = []
        self._values = []
        self._held = 0
        items = (keys >> np.uint64(_ITEM_SHIFT)).astype(np.int32)
        factors = ((keys >> np.uint64(_FACTOR_SHIFT)) & np.uint64(0xFF)).astype(np.uint8)
        out: ShuffledReports | ShuffledValues
        if values is None:
            out = ShuffledReports(items, factors, (keys & np.uint64(1)).astype(np.uint8))
        else:
            out = ShuffledValues(items, factors, values)
        self.bytes_down += out.nbytes
        self.reports_forwarded += len(out)
        logger.debug("forwarded %d shuffled reports", len(out))
        return out
