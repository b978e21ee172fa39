"""The secure sum with a validity proof on every upload (issue 31 §1): Prio3 shares
(draft-irtf-cfrg-vdaf-20 §7, :mod:`.vdaf.contribution`) in place of the ring's mask seed and
share; the proxy is Prio3's Helper, the server its Leader.

    client:  y = v + z (z the truncated share, :mod:`.vdaf.noise_bounds`)
             rep = check.shard(y, nonce = message id, rand = os.urandom)
             upload = "DSU3" | round | message id | public share (64)
                      | helper share sealed to the proxy | leader share sealed to the server
             (both boxes bind the public share in their associated data)
    proxy:   opens the helper box; verifier share vs_h under the round's verify key
    server:  (at POST /shares) opens the leader box; vs_l; verdict = the joint decision of
             (vs_l, vs_h), or the reason; answers vs_l too, so the proxy decides itself
    proxy:   keeps the reports both accept (a server lying about a verdict only removes
             reports, which the release rule bounds) and folds their output shares into a
             running aggregate share; the server keeps its output share of every report it
             accepted (by message id, on disk). Both run chunk by chunk, so neither holds
             more than one chunk of reports at once.
    proxy:   releases ONCE its aggregate share with the message ids of the agreed set
    server:  counts the ids against [min_honest, n_clients] before anything else, sums its
             own kept output shares of exactly those ids (refusing the whole release if one
             is not a report it accepted), and unshards the sum.

The verify key (32 bytes, draft §7.2): the proxy derives it per run and round from its own
private key by HKDF-SHA256 (:func:`verify_key`; the same after a restart, unknown to
clients) and seals it to the server in every batch.

Batch (proxy -> server, "DSC3"):
    label | round (u64 BE) | count (u32 BE) | proxy key (32) | verify key box (32 + 56)
    | count x (message id (16) | public share | leader box | helper verifier share)
Release ("DSR4"): 8 d + 16 bytes per report, never the reports themselves:
    label | round (u64 BE) | count (u32 BE) | proxy key (32)
    | the proxy's aggregate share (OUTPUT_LEN x 8) | count x message id (16)
"""

from __future__ import annotations

import dataclasses
import os
import struct
from collections.abc import Callable

import numpy as np
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from dprec.protocol.secure_sum.errors import (
    InvalidProofError,
    MalformedUploadError,
    OversizedUploadError,
    SecureSumError,
)
from dprec.protocol.secure_sum.messages import MESSAGE_ID_BYTES, associated_data
from dprec.protocol.secure_sum.sealed import KEY_BYTES, OVERHEAD, KeyPair, open_box, seal
from dprec.protocol.secure_sum.vdaf.contribution import ContributionCheck

__all__ = ["KeptOutputs", "ProvedBatch", "ProvedRelease", "ProvedUpload", "bound_data",
           "fold_outputs", "prove_and_seal", "proxy_confirm", "proxy_prepare", "seal_verify_key",
           "server_sum", "server_verify", "verify_key"]

_UPLOAD, _BATCH, _RELEASE = b"DSU3", b"DSC3", b"DSR4"
_HEAD = struct.Struct(">4sQ16s")
_BATCH_HEAD = struct.Struct(f">4sQI{KEY_BYTES}s")
VERIFY_KEY_BYTES = 32
_KEY_BOX = VERIFY_KEY_BYTES + OVERHEAD
_VERIFY_KEY_LABEL = b"dprec prio3 verify key v1|"


def bound_data(run: bytes, round_id: int, message_id: bytes, role: str, public: bytes) -> bytes:
    return associated_data(run, round_id, message_id, role) + public


@dataclasses.dataclass(frozen=True)
class ProvedUpload:
    """One client's proved contribution to one round."""

    round_id: int
    message_id: bytes
    public_share: bytes
    helper_box: bytes
    leader_box: bytes

    def to_bytes(self) -> bytes:
        return (_HEAD.pack(_UPLOAD, self.round_id, self.message_id) + self.public_share
                + self.helper_box + self.leader_box)

    @staticmethod
    def size(check: ContributionCheck) -> int:
        s = check.sizes()
        return (_HEAD.size + s["public_share"] + s["helper_share"] + OVERHEAD
                + s["leader_share"] + OVERHEAD)

    @classmethod
    def from_bytes(cls, data: bytes, check: ContributionCheck) -> ProvedUpload:
        expected = cls.size(check)
        if len(data) > expected:
            raise OversizedUploadError(f"a proved upload of this round has {expected} bytes, "
                                       f"got {len(data)}: refused")
        if len(data) < expected or data[:4] != _UPLOAD:
            raise MalformedUploadError(f"not a proved upload of this round (expected "
                                       f"{expected} bytes starting {_UPLOAD!r})")
        _, round_id, mid = _HEAD.unpack_from(data)
        s = check.sizes()
        a = _HEAD.size + s["public_share"]
        b = a + s["helper_share"] + OVERHEAD
        return cls(round_id, mid, data[_HEAD.size:a], data[a:b], data[b:])


def prove_and_seal(check: ContributionCheck, run: bytes, proxy_key: bytes, server_key: bytes,
                   y: np.ndarray, round_id: int) -> bytes:
    """The upload of the noised integer vector ``y``: Prio3 shares with their proof (client
    randomness and message id from the OS CSPRNG), sealed to the proxy and the server."""
    mid = os.urandom(MESSAGE_ID_BYTES)
    rep = check.shard(np.asarray(y, dtype=np.int64), nonce=mid, rand=os.urandom(check.rand_size))
    pub = rep.public_share
    return ProvedUpload(round_id, mid, pub,
                        seal(proxy_key, rep.helper_share,
                             bound_data(run, round_id, mid, "proxy", pub)),
                        seal(server_key, rep.leader_share,
                             bound_data(run, round_id, mid, "server", pub))).to_bytes()


def verify_key(keys: KeyPair, run: bytes, round_id: int) -> bytes:
    """The round's Prio3 verify key: HKDF-SHA256 of the proxy's private key, bound to the run
    and round (the proxy and, through the sealed batch, the server know it; no client)."""
    info = _VERIFY_KEY_LABEL + run + struct.pack(">Q", round_id)
    return HKDF(hashes.SHA256(), VERIFY_KEY_BYTES, None, info).derive(keys.private_raw())


def proxy_prepare(check: ContributionCheck, keys: KeyPair, run: bytes, upload: ProvedUpload,
                  key: bytes) -> tuple[object, bytes]:
    """The proxy's (Helper's) verify state and verifier share of ``upload``; raises
    :class:`SecureSumError` if its box does not open or its share does not parse."""
    share = open_box(keys, upload.helper_box, bound_data(run, upload.round_id, upload.message_id,
                                                     "proxy", upload.public_share))
    return check.prep_init(1, key, upload.message_id, upload.public_share, share)


def proxy_confirm(check: ContributionCheck, state: object, helper_vs: bytes,
                  leader_vs: bytes | None) -> str | None:
    """The proxy's own decision on a report the server says is valid, from the server's
    verifier share ``leader_vs``: None if the proofs and the joint randomness pass."""
    if leader_vs is None:
        return "the server sent no verifier share for it"
    try:
        check.prep_finish(state, check.prep_shares_to_prep(leader_vs, helper_vs))
    except SecureSumError as e:
        return f"{type(e).__name__}: {e}"
    return None


@dataclasses.dataclass(frozen=True)
class ProvedBatch:
    """What the proxy sends the server to check (one chunk of the round's reports)."""

    round_id: int
    proxy_key: bytes
    key_box: bytes
    """The verify key sealed to the server."""
    items: tuple[tuple[bytes, bytes, bytes, bytes], ...]
    """``(message id, public share, leader box, helper verifier share)``."""

    def to_bytes(self) -> bytes:
        head = _BATCH_HEAD.pack(_BATCH, self.round_id, len(self.items), self.proxy_key)
        return head + self.key_box + b"".join(b"".join(item) for item in self.items)

    @staticmethod
    def item_sizes(check: ContributionCheck) -> tuple[int, int, int, int]:
        s = check.sizes()
        return (MESSAGE_ID_BYTES, s["public_share"], s["leader_share"] + OVERHEAD,
                s["verifier_share"])

    @classmethod
    def from_bytes(cls, data: bytes, check: ContributionCheck) -> ProvedBatch:
        """Parse a batch, checking the length the count and ``check`` fix."""
        if len(data) < _BATCH_HEAD.size or data[:4] != _BATCH:
            raise MalformedUploadError("not a proved secure-sum batch")
        _, round_id, count, proxy_key = _BATCH_HEAD.unpack_from(data)
        sizes = cls.item_sizes(check)
        start = _BATCH_HEAD.size + _KEY_BOX
        _check_length(data, start + count * sum(sizes), f"a proved batch of {count} reports")
        items, o = [], start
        for _ in range(count):
            parts = []
            for size in sizes:
                parts.append(data[o:o + size])
                o += size
            items.append(tuple(parts))
        key_box = data[_BATCH_HEAD.size:start]
        return cls(round_id, proxy_key, key_box, tuple(items))  # type: ignore[arg-type]


@dataclasses.dataclass(frozen=True)
class ProvedRelease:
    """The proxy's one release of a round: its aggregate share over exactly the reports
    ``ids`` (their message ids); the server adds its own kept output shares of them."""

    round_id: int
    proxy_key: bytes
    aggregate: bytes
    """The proxy's encoded aggregate share (``OUTPUT_LEN`` field elements)."""
    ids: tuple[bytes, ...]

    def to_bytes(self) -> bytes:
        head = _BATCH_HEAD.pack(_RELEASE, self.round_id, len(self.ids), self.proxy_key)
        return head + self.aggregate + b"".join(self.ids)

    @staticmethod
    def size(check: ContributionCheck, count: int) -> int:
        """Bytes of a release of ``count`` reports."""
        return _BATCH_HEAD.size + 8 * check.vdaf.flp.OUTPUT_LEN + count * MESSAGE_ID_BYTES

    @classmethod
    def from_bytes(cls, data: bytes, check: ContributionCheck) -> ProvedRelease:
        if len(data) < _BATCH_HEAD.size or data[:4] != _RELEASE:
            raise MalformedUploadError("not a proved secure-sum release")
        _, round_id, count, proxy_key = _BATCH_HEAD.unpack_from(data)
        _check_length(data, cls.size(check, count), f"a proved release of {count} reports")
        start = _BATCH_HEAD.size + 8 * check.vdaf.flp.OUTPUT_LEN
        ids = tuple(data[o:o + MESSAGE_ID_BYTES]
                    for o in range(start, len(data), MESSAGE_ID_BYTES))
        return cls(round_id, proxy_key, data[_BATCH_HEAD.size:start], ids)


def _check_length(data: bytes, expected: int, what: str) -> None:
    if len(data) != expected:
        error = OversizedUploadError if len(data) > expected else MalformedUploadError
        raise error(f"{what} has {expected} bytes, got {len(data)}")


def seal_verify_key(server_key: bytes, run: bytes, round_id: int, key: bytes) -> bytes:
    """The verify key sealed to the server, bound to the run and round."""
    return seal(server_key, key, _VERIFY_KEY_LABEL + run + struct.pack(">Q", round_id))


def _open_verify_key(keys: KeyPair, run: bytes, batch: ProvedBatch) -> bytes:
    return open_box(keys, batch.key_box,
                    _VERIFY_KEY_LABEL + run + struct.pack(">Q", batch.round_id))


def _leader_verify(check: ContributionCheck, keys: KeyPair, run: bytes, round_id: int,
                   key: bytes, item: tuple[bytes, bytes, bytes, bytes]
                   ) -> tuple[np.ndarray, bytes]:
    """The server's output share and verifier share of one report; raises
    :class:`SecureSumError` (e.g. :class:`InvalidProofError`) with the reason it fails."""
    mid, pub, box, helper_vs = item
    share = open_box(keys, box, bound_data(run, round_id, mid, "server", pub))
    state, leader_vs = check.prep_init(0, key, mid, pub, share)
    out = check.prep_finish(state, check.prep_shares_to_prep(leader_vs, helper_vs))
    return out, leader_vs


def server_verify(check: ContributionCheck, keys: KeyPair, run: bytes, batch: ProvedBatch,
                  round_id: int, outputs: dict[bytes, bytes] | None = None
                  ) -> tuple[dict[bytes, str | None], dict[bytes, bytes]]:
    """The server's verdict on each report of ``batch`` (None: the proofs pass) and its
    verifier share of each report it could prepare (what the proxy decides with); with
    ``outputs``, the encoded output share of every report that passes is put there (what
    the server keeps until the release)."""
    if batch.round_id != round_id:
        raise SecureSumError(f"the batch is for round {batch.round_id}, not {round_id}")
    key = _open_verify_key(keys, run, batch)
    verdicts: dict[bytes, str | None] = {}
    shares: dict[bytes, bytes] = {}
    for item in batch.items:
        mid = item[0]
        if mid in verdicts:
            verdicts[mid] = "its message id is repeated in the round"
            if outputs is not None:
                outputs.pop(mid, None)
            continue
        try:
            out, shares[mid] = _leader_verify(check, keys, run, round_id, key, item)
            verdicts[mid] = None
            if outputs is not None:
                outputs[mid] = check.vdaf.field.encode(out)
        except InvalidProofError as e:
            verdicts[mid] = f"invalid proof: {e}"
            _, pub, box, _ = item
            try:  # its verifier share, so the proxy sees the refusal is right
                shares[mid] = check.prep_init(0, key, mid, pub, open_box(
                    keys, box, bound_data(run, round_id, mid, "server", pub)))[1]
            except SecureSumError:
                pass
        except (SecureSumError, ValueError) as e:
            verdicts[mid] = f"{type(e).__name__}: {e}"
    return verdicts, shares


KeptOutputs = Callable[[list[bytes]], list[bytes | None]]
"""``message ids -> the server's kept encoded output share of each`` (None: none kept)."""

SUM_CHUNK = 1024
"""Output shares read and added at once."""


def fold_outputs(check: ContributionCheck, aggregate: np.ndarray | None,
                 outs: list[np.ndarray]) -> np.ndarray:
    """``aggregate + sum(outs)`` in the field (None: start from zero)."""
    return check.vdaf.aggregate(outs if aggregate is None else [aggregate, *outs])


def server_sum(check: ContributionCheck, release: ProvedRelease, round_id: int,
               min_senders: int, max_senders: int, kept: KeptOutputs
               ) -> tuple[np.ndarray, int]:
    """``(integer sum, count)`` of the proxy's release: its size is checked against
    ``[min_senders, max_senders]`` and its ids for repeats before anything else, then the
    server's own kept output shares of exactly those ids are added (``kept``, in chunks of
    :data:`SUM_CHUNK`), the whole release refused if one id is not a report it accepted."""
    count = len(release.ids)
    if release.round_id != round_id:
        raise MalformedUploadError(f"not a proved release of round {round_id}")
    if not min_senders <= count <= max_senders:
        raise SecureSumError(f"the release sums {count} reports, outside [{min_senders}, "
                             f"{max_senders}] (min_honest, n_clients); refused unopened")
    if len(set(release.ids)) != count:
        raise SecureSumError("the release repeats a message id; refused")
    field = check.vdaf.field
    total: np.ndarray | None = None
    for start in range(0, count, SUM_CHUNK):
        ids = list(release.ids[start:start + SUM_CHUNK])
        outs = kept(ids)
        if any(o is None for o in outs):
            raise SecureSumError("the release names a report this server did not accept; "
                                 "refused")
        total = fold_outputs(check, total, [field.decode(o) for o in outs])  # type: ignore[arg-type]
    assert total is not None
    out = check.unshard([field.encode(total), release.aggregate], count)
    return np.asarray(out, dtype=np.int64), count
