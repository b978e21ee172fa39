"""The shuffling proxy (FMF-LDP, docs/architecture.md §2, roles).

The proxy strips the sender's identity and metadata, splits each client message into
single reports, holds them, and on :meth:`Shuffler.flush` forwards them in a uniformly
random order drawn from its own generator. It keeps no mapping from report to sender:
reports are stored as a bag, and before shuffling they are put in a canonical order
(sorted by item, factor, then bit or value), so the forwarded batch depends only on the
multiset of reports and the proxy's generator, never on who sent what or in which order.

Both steps are linear in the reports where it pays (:mod:`dprec.protocol.permutation`): each
report is packed into one integer code, (item, factor, bit) into the bits the round's largest
item and factor need (18 bits below 16,384 items and 8 factors, so a counting sort), or
(item, factor) above the 32 bits of an order-preserving image of the float32 value; the codes
are sorted, shuffled by a bucketed Fisher-Yates drawing from the proxy's generator, and
unpacked.

Seeded generators are for simulation; a deployed proxy must draw its permutation from a
cryptographically secure source.
"""

from __future__ import annotations

import logging

import numba
import numpy as np

from dprec.errors import DprecError
from dprec.protocol.messages import (
    GradientReports,
    Message,
    ShuffledReports,
    ShuffledValues,
    ValueReports,
)
from dprec.protocol.permutation import canonical_sort, shuffle

logger = logging.getLogger(__name__)

__all__ = ["ShuffleRefusedError", "Shuffler", "SubmissionRefusedError"]

DEFAULT_THRESHOLD = 100
"""Distinct senders a batch needs before it is forwarded. Below about 100 senders the FMT21
bound gives no amplification at the FMF-LDP paper's eps0 (eps_s = 2.4999 for eps0 = 2.5 at
n = 100, delta = 1e-6) and a report's origin is guessable from a handful of candidates."""
DEFAULT_MAX_REPORTS_PER_SENDER = 1 << 16
DEFAULT_MAX_REPORTS = 1 << 27
"""At most 134M reports held (6 bytes each as one-bit reports, 9 as real-valued ones), whoever
sends them."""

_SIGN = np.uint32(0x80000000)
_ONES = np.uint32(0xFFFFFFFF)


def _sortable(values: np.ndarray) -> np.ndarray:
    """float32 -> uint32 whose unsigned order is the float order (-0 just below +0): flip
    the sign bit of a positive value, every bit of a negative one. Exact inverse:
    :func:`_unsortable`."""
    bits = np.ascontiguousarray(values, np.float32).view(np.uint32)
    return bits ^ np.where(bits & _SIGN, _ONES, _SIGN)


def _unsortable(codes: np.ndarray) -> np.ndarray:
    return (codes ^ np.where(codes & _SIGN, _SIGN, _ONES)).view(np.float32)


@numba.njit(cache=True)
def _pack(items, factors, low, factor_bits, low_bits, out):  # pragma: no cover - compiled
    """out[r] = (items[r] << factor_bits | factors[r]) << low_bits | low[r]."""
    fb = np.uint64(factor_bits)
    lb = np.uint64(low_bits)
    for r in range(items.size):
        cell = (np.uint64(items[r]) << fb) | np.uint64(factors[r])
        out[r] = (cell << lb) | np.uint64(low[r])


@numba.njit(cache=True)
def _unpack(codes, factor_bits, low_bits, items, factors, low):  # pragma: no cover - compiled
    fb = np.uint64(factor_bits)
    lb = np.uint64(low_bits)
    fmask = np.uint64((1 << factor_bits) - 1)
    lmask = np.uint64((1 << low_bits) - 1)
    for r in range(codes.size):
        c = np.uint64(codes[r])
        low[r] = c & lmask
        cell = c >> lb
        factors[r] = cell & fmask
        items[r] = cell >> fb


class ShuffleRefusedError(DprecError):
    """The proxy holds reports of fewer senders than its threshold and will not forward them."""


class SubmissionRefusedError(DprecError):
    """A submission the proxy will not hold: a replay, a second one from the same sender in
    one round, or more reports than the memory bounds allow."""


class Shuffler:
    """Anonymising, shuffling proxy.

    ``threshold``: the smallest number of distinct senders whose reports the proxy forwards
    in one batch (a batch from one sender would link every report to it). Each sender has
    one submission per round: a replay or a second message from the same id is refused, as
    is anything past ``max_reports_per_sender`` or ``max_reports`` held in total. The sender
    ids of the round are kept as a set, never linked to reports, and forgotten on flush.
    ``rng``: the proxy's own generator.
    Counters: ``bytes_up`` (client messages received, serialised size), ``bytes_down``
    (batches forwarded), ``messages_received``, ``reports_forwarded``.
    """

    def __init__(self, threshold: int, rng: np.random.Generator, *,
                 max_reports_per_sender: int = DEFAULT_MAX_REPORTS_PER_SENDER,
                 max_reports: int = DEFAULT_MAX_REPORTS) -> None:
        for name, value in (("threshold", threshold),
                            ("max_reports_per_sender", max_reports_per_sender),
                            ("max_reports", max_reports)):
            if isinstance(value, bool) or int(value) != value or value < 1:
                raise DprecError(f"{name} must be an integer >= 1, got {value}")
        if not isinstance(rng, np.random.Generator):
            raise DprecError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        self.threshold = int(threshold)
        self.max_reports_per_sender = int(max_reports_per_sender)
        self.max_reports = int(max_reports)
        self._senders: list[np.ndarray] = []
        self._n_senders = 0
        self._rng = rng
        self._items: list[np.ndarray] = []
        self._factors: list[np.ndarray] = []
        self._low: list[np.ndarray] = []
        """Per held submission: int32 items, uint8 factors, and uint8 bits or the uint32
        order-preserving images of float32 values (:func:`_sortable`)."""
        self._real_valued: bool | None = None
        self._held = 0
        self.bytes_up = 0
        self.bytes_down = 0
        self.messages_received = 0
        self.reports_forwarded = 0

    @property
    def held(self) -> int:
        """Number of reports waiting to be forwarded."""
        return self._held

    @property
    def senders(self) -> int:
        """Number of distinct senders whose reports are held."""
        return self._n_senders

    def _admit(self, ids: np.ndarray, k: int) -> None:
        """Refuse duplicates, replays and submissions past the memory bounds (before holding)."""
        ids = np.asarray(ids)
        if ids.size and not np.issubdtype(ids.dtype, np.integer):
            raise SubmissionRefusedError(f"sender ids must be integers, got dtype {ids.dtype}")
        ids = ids.astype(np.int64, copy=False).ravel()
        if k > self.max_reports_per_sender:
            raise SubmissionRefusedError(
                f"a sender may submit at most {self.max_reports_per_sender} reports per round, "
                f"got {k}")
        if self._held + ids.size * k > self.max_reports:
            raise SubmissionRefusedError(
                f"the proxy holds at most {self.max_reports} reports; refusing "
                f"{ids.size * k} more on top of {self._held}")
        uniq = np.unique(ids)
        if uniq.size != ids.size:
            raise SubmissionRefusedError("one submission names the same sender twice")
        for seen in self._senders:
            dup = np.intersect1d(seen, uniq, assume_unique=True)
            if dup.size:
                raise SubmissionRefusedError(
                    f"sender {int(dup[0])} already submitted this round (replay or duplicate)")
        self._senders.append(uniq)
        self._n_senders += uniq.size

    def _check_kind(self, real_valued: bool) -> None:
        if self._real_valued is not None and real_valued != self._real_valued:
            raise DprecError("one batch must not mix one-bit and real-valued reports")

    def _hold(self, items: np.ndarray, factors: np.ndarray, bits: np.ndarray | None,
              values: np.ndarray | None) -> None:
        """Keep validated reports (the arrays of a ShuffledReports / ShuffledValues)."""
        self._check_kind(values is not None)
        self._real_valued = values is not None
        self._items.append(items)
        self._factors.append(factors)
        self._low.append(_sortable(values) if values is not None else bits)
        self._held += items.size

    def submit(self, message: GradientReports | ValueReports | bytes) -> None:
        """Accept one client's message (object or bytes): drop its id, keep its reports."""
        if isinstance(message, (bytes, bytearray, memoryview)):
            size = len(message)
            message = Message.from_bytes(message)
        elif isinstance(message, (GradientReports, ValueReports)):
            size = message.nbytes
        else:
            size = 0
        if not isinstance(message, (GradientReports, ValueReports)):
            raise DprecError(
                "message must be GradientReports, ValueReports or bytes, got "
                f"{type(message).__name__}"
            )
        self._check_kind(isinstance(message, ValueReports))
        self._admit(np.array([message.client_id]), message.k)
        if isinstance(message, GradientReports):
            self._hold(message.items, message.factors, message.bits, None)
        else:
            self._hold(message.items, message.factors, None, message.values)
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
        client ``u``'s message (same content as :class:`GradientReports`). ``client_ids``
        (required, one per row) are checked like the message path's ids, then forgotten.
        Byte counts are those of
        ``n_clients`` serialised :class:`GradientReports` of ``k`` reports. Real-valued
        reports pass ``values`` instead of ``bits`` (as :class:`ValueReports`).
        """
        if (bits is None) == (values is None):
            raise DprecError("pass exactly one of bits or values")
        if client_ids is None:
            raise DprecError("client_ids are required: the proxy counts and checks senders")
        if np.shape(client_ids) != (np.shape(items)[0] if np.ndim(items) else -1,):
            raise DprecError(f"client_ids must have one entry per row of items, got shape "
                             f"{np.shape(client_ids)} for items of shape {np.shape(items)}")
        if values is not None:
            items, factors = np.asarray(items), np.asarray(factors)
            if items.ndim != 2 or np.shape(values) != items.shape:
                raise DprecError("items, factors and values must be 2-D of equal shape")
            flat = ShuffledValues(items.ravel(), factors.ravel(), np.asarray(values).ravel())
            self._check_kind(True)
            self._admit(np.asarray(client_ids), items.shape[1])
            self._hold(flat.items, flat.factors, None, flat.values)
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
        flat = ShuffledReports(items.ravel(), factors.ravel(), bits.ravel())  # validates
        self._check_kind(False)
        self._admit(np.asarray(client_ids), k)
        self._hold(flat.items, flat.factors, flat.bits, None)
        self.bytes_up += n_clients * GradientReports.serialized_size(k)
        self.messages_received += n_clients

    def _codes(self, real_valued: bool) -> tuple[np.ndarray, int, int]:
        """Every held report as one integer code, and the (factor, low) field widths.

        code = (item << factor_bits | factor) << low_bits | low, with factor_bits the bit
        length of the largest factor held and low_bits 1 (the bit) or 32 (the value's
        order-preserving image), so ascending codes are ascending (item, factor, low).
        """
        top_item = max((int(a.max()) for a in self._items if a.size), default=0)
        top_factor = max((int(a.max()) for a in self._factors if a.size), default=0)
        factor_bits = top_factor.bit_length()
        low_bits = 32 if real_valued else 1
        width = top_item.bit_length() + factor_bits + low_bits
        codes = np.empty(self._held, np.uint32 if width <= 32 else np.uint64)
        at = 0
        for items, factors, low in zip(self._items, self._factors, self._low, strict=True):
            _pack(items, factors, low, factor_bits, low_bits, codes[at:at + items.size])
            at += items.size
        return codes, factor_bits, low_bits

    def flush(self) -> ShuffledReports | ShuffledValues:
        """Forward all held reports in a uniformly random order, or refuse.

        Raises :class:`ShuffleRefusedError` (keeping the reports) when reports of fewer than
        ``threshold`` distinct senders are held.
        """
        if self._n_senders < self.threshold or not self._held:
            raise ShuffleRefusedError(
                f"senders must be >= threshold {self.threshold} to forward, got "
                f"{self._n_senders} ({self._held} reports)"
            )
        real_valued = bool(self._real_valued)
        codes, factor_bits, low_bits = self._codes(real_valued)
        codes = shuffle(canonical_sort(codes), self._rng)  # canonical order, then shuffled
        self._items, self._factors, self._low = [], [], []
        self._real_valued = None
        self._held = 0
        self._senders = []
        self._n_senders = 0
        items = np.empty(codes.size, np.int32)
        factors = np.empty(codes.size, np.uint8)
        low = np.empty(codes.size, np.uint32 if real_valued else np.uint8)
        _unpack(codes, factor_bits, low_bits, items, factors, low)
        out: ShuffledReports | ShuffledValues
        if real_valued:
            out = ShuffledValues(items, factors, _unsortable(low))
        else:
            out = ShuffledReports(items, factors, low)
        self.bytes_down += out.nbytes
        self.reports_forwarded += len(out)
        logger.debug("forwarded %d shuffled reports", len(out))
        return out
