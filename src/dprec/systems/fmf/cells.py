"""FMF-LDP cells the client does not choose (issue 26 §1, ``cells=assigned``).

Algorithm 1 lets each client draw its k (item, factor) cells itself; a poisoning client then
puts all its reports on the target items. Here the cells are a public function of the
round and of a per-client token fixed before the round:

- ``seed = SHA-256(DOMAIN || shape || V)``: the round's public seed, the hash of the
  server's broadcast item matrix V (:func:`round_seed`);
- ``token_u = HMAC-SHA256(key, id_u)``: the client's token, issued at registration by the
  proxy, which keeps ``key``; the server never sees either (:func:`client_tokens`);
- ``SHAKE-256(seed || token_u)`` read as little-endian uint64 words ``w``; words
  ``w >= L = floor(2^64 / (N F)) N F`` are rejected, the first k kept give the cells
  ``c = w mod N F``, item ``c // F``, factor ``c mod F`` (:func:`assigned_cells`).

Guarantee (the privacy analysis is unchanged). Modelling SHAKE-256 as a random oracle, the
accepted words are i.i.d. uniform on [0, L), so the k cells are i.i.d. uniform on the N F
cells, i.e. items i.i.d. uniform on [0, N) and factors i.i.d. uniform on [0, F),
independently of each other and of every user's data: exactly the law of
:func:`~dprec.systems.fmf.client.sample_slots`. An honest client's report (i, f, M(x_if)) thus
has the same distribution as with ``cells=chosen``, each value is the same eps-LDP
mechanism, and the event log (hence the privacy report) is the same. The server cannot
link a cell to a user: it lacks the tokens, so to it each user's cells are pseudorandom
(the shuffle argument needs exactly that). The proxy, which sees senders anyway, can.
Attackers cannot steer their cells: the token is fixed before V is broadcast, and V is the
server's (their reports of earlier rounds move it, but by a descent step they cannot grind
within one round). Left open: Sybils that register many tokens and report only with those
that drew target cells.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from dprec.errors import DprecError
from dprec.protocol.batches import ReportBatch
from dprec.protocol.engine import ShufflingProxy

__all__ = ["CELLS_TOKEN_BYTES", "DOMAIN", "CellCheckingProxy", "assigned_cells",
           "client_tokens", "parse_token", "round_seed"]

DOMAIN = b"dprec/fmf-ldp/assigned-cells/v1"
"""Domain-separation prefix of the round seed."""
CELLS_TOKEN_BYTES = 32
"""Bytes of a client's token (one HMAC-SHA256)."""


def round_seed(V: np.ndarray) -> bytes:
    """SHA-256 of the broadcast V (float64, C order, with its shape): the round's public seed."""
    v = np.ascontiguousarray(V, np.float64)
    h = hashlib.sha256(DOMAIN)
    h.update(np.asarray(v.shape, "<i8").tobytes())
    h.update(v.astype("<f8", copy=False).tobytes())
    return h.digest()


def client_tokens(key: bytes, ids: np.ndarray) -> list[bytes]:
    """token_u = HMAC-SHA256(key, id_u as int64 little-endian): one per id, in order."""
    if len(key) < 16:
        raise DprecError("the registration key must hold at least 16 bytes")
    raw = np.asarray(ids, "<i8")
    return [hmac.new(key, raw[j:j + 1].tobytes(), hashlib.sha256).digest()
            for j in range(len(raw))]


def parse_token(text: object) -> bytes:
    """A token sent as hex (a device reading its proxy's reply): exactly
    :data:`CELLS_TOKEN_BYTES` bytes, else :class:`DprecError`."""
    if not isinstance(text, str) or len(text) != 2 * CELLS_TOKEN_BYTES:
        raise DprecError(f"a cells token must be {2 * CELLS_TOKEN_BYTES} hex digits, got "
                         f"{str(text)[:80]!r}")
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        raw = b""
    if len(raw) != CELLS_TOKEN_BYTES:
        raise DprecError(f"a cells token must be hex, got {text[:80]!r}")
    return raw


def assigned_cells(seed: bytes, tokens: list[bytes], k: int, n_items: int, n_factors: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The k cells of each token this round: items int32 ``(n, k)``, factors uint8 ``(n, k)``.

    Rejection rule of the module docstring; ``2 k`` words are read per client and, in the
    (probability < 2^-40 for any realistic N F) event that fewer than k are accepted, more.
    """
    cells_total = int(n_items) * int(n_factors)
    if k < 1 or cells_total < 1:
        raise DprecError(f"need k >= 1 and a non-empty item x factor grid, got k={k}, "
                         f"{n_items} x {n_factors}")
    limit = np.uint64((2**64 // cells_total) * cells_total)
    n = len(tokens)
    words = 2 * k
    out = np.empty((n, k), np.int64)
    if n:
        stream = b"".join(hashlib.shake_256(seed + t).digest(8 * words) for t in tokens)
        w = np.frombuffer(stream, "<u8").reshape(n, words)
        ok = w < limit
        short = np.flatnonzero(ok.sum(axis=1) < k)
        rank = np.cumsum(ok, axis=1)
        take = ok & (rank <= k)
        full = np.setdiff1d(np.arange(n), short)
        out[full] = (w[full][take[full]] % np.uint64(cells_total)).astype(np.int64).reshape(-1, k)
        for j in short:
            out[j] = _long_draw(seed + tokens[j], k, limit, cells_total)
    return (out // n_factors).astype(np.int32), (out % n_factors).astype(np.uint8)


def _long_draw(message: bytes, k: int, limit: np.uint64, cells_total: int) -> np.ndarray:
    """The same rule reading as many words as it takes (the rare rejected-heavy client)."""
    words = 4 * k
    while True:
        w = np.frombuffer(hashlib.shake_256(message).digest(8 * words), "<u8")
        w = w[w < limit]
        if len(w) >= k:
            return (w[:k] % np.uint64(cells_total)).astype(np.int64)
        words *= 2


class CellCheckingProxy(ShufflingProxy):
    """The shuffling proxy of ``cells=assigned``: before shuffling, where senders are still
    known, it recomputes each sender's cells from the round's broadcast and the token it
    issued (``key``) and ignores the whole message of a sender whose cells differ (the round
    goes on with the others; one bad sender cannot deny the round). ``refused``: messages
    ignored so far. The server is unchanged and never learns the assignment.
    """

    def __init__(self, threshold: int, key: bytes, broadcast: Callable[[], np.ndarray],
                 k: int, n_items: int, n_factors: int,
                 rng: np.random.Generator | None = None) -> None:
        super().__init__(threshold, rng)
        self._key = key
        self._broadcast = broadcast
        self._shape = (int(k), int(n_items), int(n_factors))
        self.refused = 0

    def operator_secret(self) -> dict[str, str]:
        """The key, for the services' proxy to check with (``POST /v1/secret``; the same
        check in :class:`~dprec.systems.fmf.proxy.AssignedCellsRelay`)."""
        return {"cells_key": self._key.hex()}

    def forward(self, messages: Iterable[Any]) -> Iterator[Any]:
        seed = round_seed(self._broadcast())
        yield from super().forward(self._checked(m, seed) for m in messages)

    def _checked(self, m: ReportBatch, seed: bytes) -> ReportBatch:
        k, n_items, n_factors = self._shape
        items, factors = assigned_cells(seed, client_tokens(self._key, m.client_ids), k,
                                        n_items, n_factors)
        ok = ((np.shape(m.items) == items.shape)
              and np.all(m.items == items, axis=1) & np.all(m.factors == factors, axis=1))
        ok = np.broadcast_to(ok, (m.n_clients,))
        self.refused += int(m.n_clients - ok.sum())
        if ok.all():
            return m
        return ReportBatch(m.client_ids[ok], m.items[ok], m.factors[ok],
                           bits=None if m.bits is None else m.bits[ok],
                           values=None if m.values is None else m.values[ok])
