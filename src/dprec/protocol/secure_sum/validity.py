"""Which uploads of a round are valid, and which the round releases (issue 31 §2).

A round is released in three steps, so that one bad upload removes that upload only:

1. **Check.** The proxy sends the server the round's share boxes without any mask sum
   (:class:`~dprec.protocol.secure_sum.messages.ShareBatch`). The server opens each one and
   runs its :class:`ShareCheck` hooks on the plaintext; it answers a verdict per message id
   (None: valid, else the reason). Opening a share reveals nothing: it is ``v - r mod q``
   with ``r`` a one-time pad only the proxy can expand.
2. **Agree.** The proxy intersects the server's valid set with its own (the uploads whose
   seed box it opened) (:func:`agree`) and applies the :class:`ReleaseRule`: at least
   ``max(threshold, min_honest)`` and at most ``n_clients`` uploads.
3. **Release once.** The proxy releases the mask sum over exactly that set (folded chunk
   by chunk), with the set's message ids and no share, recorded durably before it is sent,
   so a retry re-sends the same release and never one over another set; the server refuses
   a second release of the round, counts the release against ``[min_honest, n_clients]``
   and sums the shares it kept at step 1 of exactly those ids, refusing the whole release
   if one id is not a share it accepted
   (:meth:`~dprec.protocol.secure_sum.server.SecureSumServer.sum_kept`).

The hook. :class:`ShareCheck` is what the server runs on one opened share (its default,
:class:`RingMembership`: the length ``d ceil(b/8)`` and every value ``< q``). A Prio3
validity proof (draft-irtf-cfrg-vdaf, FLP of Boneh, Boyle, Corrigan-Gibbs, Gilboa, Ishai,
CRYPTO 2019) slots into the same step: its verification is joint, so it contributes a
:class:`ShareCheck` on the server's side (the server's verifier share) AND a verdict on the
proxy's side; :func:`agree` already takes the intersection of the two parties' verdicts,
with each party's reason kept.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence

import numpy as np

from dprec.errors import DprecError
from dprec.protocol.secure_sum.errors import SecureSumError
from dprec.protocol.secure_sum.params import SecureSumParams
from dprec.protocol.secure_sum.ring import decode_elements

__all__ = ["CHECK_CHUNK_BYTES", "KeptVerdicts", "ProvedVerdicts", "ReleaseRule", "RingMembership",
           "ShareCheck", "agree"]

CHECK_CHUNK_BYTES = 16 << 20
"""Held uploads the proxy checks at once at a close (step 1 and 2 run chunk by chunk, so
neither party holds more than about this many bytes of reports at once)."""


class ShareCheck(ABC):
    """One validity check the server runs on one opened share (the pluggable step)."""

    name: str = "check"

    @abstractmethod
    def __call__(self, message_id: bytes, plaintext: bytes, params: SecureSumParams
                 ) -> str | None:
        """None if the share passes, else the reason it is refused (one line, no data)."""


class RingMembership(ShareCheck):
    """The share is ``d`` elements of ``Z_q``: ``d ceil(b/8)`` bytes, every value ``< q``
    (a value ``>= q`` would shift the sum by a multiple of ``2^(8 ceil(b/8))``, not ``q``)."""

    name = "ring"

    def __call__(self, message_id: bytes, plaintext: bytes, params: SecureSumParams
                 ) -> str | None:
        if len(plaintext) != params.share_bytes:
            return f"a share has {params.share_bytes} bytes, got {len(plaintext)}"
        try:
            decode_elements(plaintext, 1, params.element_bytes, params.bits)
        except SecureSumError as e:
            return str(e)
        return None


def agree(proxy: Mapping[bytes, str | None], server: Mapping[bytes, str | None]
          ) -> tuple[list[bytes], dict[bytes, str]]:
    """The uploads both parties found valid (sorted by message id), and the reason each
    other upload of ``proxy`` (the proxy's held uploads) is refused: the proxy's reason
    first, then the server's; an upload the server gave no verdict on is refused."""
    valid: list[bytes] = []
    refused: dict[bytes, str] = {}
    for mid in sorted(proxy):
        mine = proxy[mid]
        if mine is not None:
            refused[mid] = f"the proxy refused it: {mine}"
        elif mid not in server:
            refused[mid] = "the server gave no verdict on it"
        elif server[mid] is not None:
            refused[mid] = f"the server refused it: {server[mid]}"
        else:
            valid.append(mid)
    return valid, refused


@dataclasses.dataclass(frozen=True)
class ReleaseRule:
    """When a round is released: between :attr:`fewest` and :attr:`most` valid uploads.

    ``fewest = max(threshold, min_honest)``: fewer honest shares than ``min_honest`` carry
    less noise than the guarantee is calibrated for; ``most = n_clients``: the ring
    ``q = 2^b`` is sized for the sum of ``n_clients`` contributions
    (:func:`~dprec.protocol.secure_sum.params.choose_params`), so more would wrap it.
    Settings that can never release are refused here, at start."""

    threshold: int
    min_honest: int
    n_clients: int

    def __post_init__(self) -> None:
        for name in ("threshold", "min_honest", "n_clients"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
                raise DprecError(f"{name} must be an integer >= 1, got {v!r}")
        if self.threshold < 2:
            raise DprecError(f"a secure-sum proxy's threshold must be >= 2 (one client's sum "
                             f"is its value), got {self.threshold}: raise --threshold")
        if self.threshold < self.min_honest:
            raise DprecError(f"the proxy's threshold {self.threshold} is below the protocol's "
                             f"min_honest = {self.min_honest}: a sum of fewer clients carries "
                             "less noise than the guarantee; start the proxy with "
                             f"--threshold {self.min_honest} or more")
        if self.fewest > self.most:
            raise DprecError(f"the proxy releases at least {self.fewest} uploads and at most "
                             f"n_clients = {self.n_clients}: no round can ever be released; "
                             "lower --threshold or enrol more clients")

    @property
    def fewest(self) -> int:
        return max(int(self.threshold), int(self.min_honest))

    @property
    def most(self) -> int:
        return int(self.n_clients)

    def choose(self, valid: Sequence[bytes], rng: np.random.Generator
               ) -> tuple[list[bytes], dict[bytes, str], list[bytes]]:
        """``(released, refused, below)``: at most :attr:`most` of ``valid`` drawn uniformly
        by ``rng`` (a CSPRNG over the services), the rest refused with the reason; all of
        them ``below`` (nothing released) when fewer than :attr:`fewest`."""
        ids = sorted(valid)
        refused: dict[bytes, str] = {}
        if len(ids) > self.most:
            keep = set(rng.choice(len(ids), size=self.most, replace=False).tolist())
            for i, mid in enumerate(ids):
                if i not in keep:
                    refused[mid] = (f"the round held more valid uploads than n_clients = "
                                    f"{self.most} (the ring q covers at most that many); "
                                    "this one was not drawn")
            ids = [mid for i, mid in enumerate(ids) if i in keep]
        if len(ids) < self.fewest:
            return [], refused, ids
        return ids, refused, []


class KeptVerdicts(dict):
    """The server's verdicts (message id -> None or the reason) on a share batch, with
    :attr:`outputs`: what it keeps of each upload that passes, by message id, until the
    release names the ones it sums (the opened ring share; a proof's output share)."""

    def __init__(self, verdicts: Mapping[bytes, str | None],
                 outputs: Mapping[bytes, bytes] | None = None) -> None:
        super().__init__(verdicts)
        self.outputs = dict(outputs or {})


class ProvedVerdicts(KeptVerdicts):
    """:class:`KeptVerdicts` of a batch of proved reports (the outputs: the server's encoded
    output shares), with :attr:`verifier_shares`: its Prio3 verifier share of each report it
    could prepare, which the server service answers beside the verdicts so the proxy decides
    each report itself (:mod:`dprec.protocol.secure_sum.proved`)."""

    def __init__(self, verdicts: Mapping[bytes, str | None],
                 verifier_shares: Mapping[bytes, bytes],
                 outputs: Mapping[bytes, bytes] | None = None) -> None:
        super().__init__(verdicts, outputs)
        self.verifier_shares = dict(verifier_shares)
