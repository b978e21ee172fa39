"""Prio3 (draft-irtf-cfrg-vdaf-20 §7.2): sharding, preparation and aggregation of one FLP.

Aggregator 0 (the Leader: dprec's server) receives the measurement share and the proof
shares in full; aggregators ``1..s-1`` (Helpers: dprec's proxy) receive one 32-byte seed
each, from which their measurement and proof shares are expanded (``USAGE_MEAS_SHARE``,
``USAGE_PROOF_SHARE``). With joint randomness each share carries a blind, the public share
carries every aggregator's joint-randomness part ``XOF(blind, agg_id || nonce ||
meas_share)``, and the aggregators recompute their own part and compare the joint
randomness seed they derive with the one the client used (§7.2.2). ``PROOFS`` independent
proofs are made and all must pass (§7.1.2).

The byte encodings are the spec's (§7.2.7); every decoder checks lengths and field ranges.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from dprec.protocol.secure_sum.errors import InvalidProofError, MalformedUploadError
from dprec.protocol.secure_sum.vdaf.flp import Circuit, Flp
from dprec.protocol.secure_sum.vdaf.xof import XofTurboShake128

__all__ = ["HelperShare", "LeaderShare", "Prio3", "VerifierShare", "VerifyState"]

VERSION = 18
"""The draft's version byte in every domain separation tag (the reference code's
``VERSION`` at draft-20)."""
USAGE_MEAS_SHARE, USAGE_PROOF_SHARE, USAGE_JOINT_RANDOMNESS = 1, 2, 3
USAGE_PROVE_RANDOMNESS, USAGE_QUERY_RANDOMNESS = 4, 5
USAGE_JOINT_RAND_SEED, USAGE_JOINT_RAND_PART = 6, 7


@dataclasses.dataclass(frozen=True)
class LeaderShare:
    """The Leader's input share: its measurement share, its proof shares, its blind."""

    measurement: np.ndarray
    proofs: np.ndarray
    blind: bytes | None


@dataclasses.dataclass(frozen=True)
class HelperShare:
    """A Helper's input share: one seed (and a blind with joint randomness)."""

    seed: bytes
    blind: bytes | None


@dataclasses.dataclass(frozen=True)
class VerifyState:
    """What an aggregator keeps between its verifier share and the verifier message."""

    out_share: np.ndarray
    corrected_joint_rand_seed: bytes | None


@dataclasses.dataclass(frozen=True)
class VerifierShare:
    """An aggregator's share of the ``PROOFS`` verifiers and its joint-randomness part."""

    verifiers: np.ndarray
    joint_rand_part: bytes | None


class Prio3:
    """One Prio3 instance: a circuit, ``PROOFS`` proofs, ``SHARES`` aggregators."""

    NONCE_SIZE = 16
    xof = XofTurboShake128
    VERIFY_KEY_SIZE = XofTurboShake128.SEED_SIZE

    def __init__(self, circuit: Circuit, proofs: int, algorithm_id: int,
                 shares: int = 2) -> None:
        if not 2 <= shares < 256 or not 1 <= proofs < 256:
            raise ValueError("shares must be in [2, 256) and proofs in [1, 256)")
        self.flp = Flp(circuit)
        self.field = circuit.field
        self.PROOFS = proofs
        self.SHARES = shares
        self.ID = algorithm_id
        self.uses_joint_rand = self.flp.JOINT_RAND_LEN > 0
        seed = self.xof.SEED_SIZE
        self.RAND_SIZE = shares * seed * (2 if self.uses_joint_rand else 1)

    # -- XOF derivations (§7.2.5) -----------------------------------------------------
    def dst(self, usage: int, ctx: bytes) -> bytes:
        return (bytes([VERSION, 0]) + self.ID.to_bytes(4, "big") + usage.to_bytes(2, "big")
                + ctx)

    def _expand(self, seed: bytes, usage: int, ctx: bytes, binder: bytes, n: int
                ) -> np.ndarray:
        return self.xof.expand_into_vec(self.field, seed, self.dst(usage, ctx), binder, n)

    def helper_meas_share(self, ctx: bytes, agg_id: int, seed: bytes) -> np.ndarray:
        return self._expand(seed, USAGE_MEAS_SHARE, ctx, bytes([agg_id]), self.flp.MEAS_LEN)

    def helper_proofs_share(self, ctx: bytes, agg_id: int, seed: bytes) -> np.ndarray:
        return self._expand(seed, USAGE_PROOF_SHARE, ctx, bytes([self.PROOFS, agg_id]),
                            self.flp.PROOF_LEN * self.PROOFS)

    def joint_rand_part(self, ctx: bytes, agg_id: int, blind: bytes, meas_share: np.ndarray,
                        nonce: bytes) -> bytes:
        return self.xof.derive_seed(blind, self.dst(USAGE_JOINT_RAND_PART, ctx),
                                    bytes([agg_id]) + nonce + self.field.encode(meas_share))

    def joint_rand_seed(self, ctx: bytes, parts: list[bytes]) -> bytes:
        return self.xof.derive_seed(bytes(self.xof.SEED_SIZE),
                                    self.dst(USAGE_JOINT_RAND_SEED, ctx), b"".join(parts))

    def joint_rands(self, ctx: bytes, seed: bytes) -> np.ndarray:
        return self._expand(seed, USAGE_JOINT_RANDOMNESS, ctx, bytes([self.PROOFS]),
                            self.flp.JOINT_RAND_LEN * self.PROOFS)

    def query_rands(self, verify_key: bytes, ctx: bytes, nonce: bytes) -> np.ndarray:
        return self._expand(verify_key, USAGE_QUERY_RANDOMNESS, ctx,
                            bytes([self.PROOFS]) + nonce, self.flp.QUERY_RAND_LEN * self.PROOFS)

    # -- the client (§7.2.1) ------------------------------------------------------------
    def shard(self, ctx: bytes, measurement: object, nonce: bytes, rand: bytes
              ) -> tuple[list[bytes] | None, list[LeaderShare | HelperShare]]:
        """The public share and the ``SHARES`` input shares of ``measurement``."""
        return self.shard_encoded(ctx, self.flp.circuit.encode(measurement), nonce, rand)

    def shard_encoded(self, ctx: bytes, meas: np.ndarray, nonce: bytes, rand: bytes
                      ) -> tuple[list[bytes] | None, list[LeaderShare | HelperShare]]:
        """:meth:`shard` of an already encoded measurement."""
        if len(nonce) != self.NONCE_SIZE or len(rand) != self.RAND_SIZE:
            raise ValueError("incorrect nonce or random bytes size")
        f, size, k = self.field, self.xof.SEED_SIZE, self.SHARES - 1
        seeds = [rand[i:i + size] for i in range(0, self.RAND_SIZE, size)]
        jr = self.uses_joint_rand
        helper_seeds = seeds[0:2 * k:2] if jr else seeds[:k]
        helper_blinds = seeds[1:2 * k:2] if jr else [None] * k
        leader_blind, prove_seed = (seeds[2 * k], seeds[2 * k + 1]) if jr else (None, seeds[k])
        leader_meas = meas
        parts: list[bytes] = []
        for j in range(k):
            share = self.helper_meas_share(ctx, j + 1, helper_seeds[j])
            leader_meas = f.sub(leader_meas, share)
            if jr:
                parts.append(self.joint_rand_part(ctx, j + 1, helper_blinds[j], share, nonce))
        joint = np.zeros(0, dtype=f.dtype)
        if jr:
            parts.insert(0, self.joint_rand_part(ctx, 0, leader_blind, leader_meas, nonce))
            joint = self.joint_rands(ctx, self.joint_rand_seed(ctx, parts))
        prove_rands = self._expand(prove_seed, USAGE_PROVE_RANDOMNESS, ctx,
                                   bytes([self.PROOFS]), self.flp.PROVE_RAND_LEN * self.PROOFS)
        pr, jl = self.flp.PROVE_RAND_LEN, self.flp.JOINT_RAND_LEN
        proofs = np.concatenate([
            self.flp.prove(meas, prove_rands[i * pr:(i + 1) * pr], joint[i * jl:(i + 1) * jl])
            for i in range(self.PROOFS)])
        for j in range(k):
            proofs = f.sub(proofs, self.helper_proofs_share(ctx, j + 1, helper_seeds[j]))
        shares: list[LeaderShare | HelperShare] = [LeaderShare(leader_meas, proofs, leader_blind)]
        shares += [HelperShare(helper_seeds[j], helper_blinds[j]) for j in range(k)]
        return (parts if jr else None), shares

    # -- the aggregators (§7.2.2) -------------------------------------------------------
    def verify_init(self, verify_key: bytes, ctx: bytes, agg_id: int, nonce: bytes,
                    public_share: list[bytes] | None, input_share: LeaderShare | HelperShare
                    ) -> tuple[VerifyState, VerifierShare]:
        """Aggregator ``agg_id``'s verifier share (and the state it keeps). Raises
        :class:`InvalidProofError` if the query point is a root of unity."""
        if agg_id == 0:
            if not isinstance(input_share, LeaderShare):
                raise MalformedUploadError("aggregator 0 takes the Leader's input share")
            meas, proofs, blind = input_share.measurement, input_share.proofs, input_share.blind
        else:
            if not isinstance(input_share, HelperShare):
                raise MalformedUploadError("a Helper takes a Helper's input share")
            meas = self.helper_meas_share(ctx, agg_id, input_share.seed)
            proofs = self.helper_proofs_share(ctx, agg_id, input_share.seed)
            blind = input_share.blind
        out_share = self.flp.circuit.truncate(meas)
        joint = np.zeros(0, dtype=self.field.dtype)
        corrected, part = None, None
        if self.uses_joint_rand:
            if blind is None or public_share is None:
                raise MalformedUploadError("this circuit needs a blind and a public share")
            part = self.joint_rand_part(ctx, agg_id, blind, meas, nonce)
            parts = list(public_share)
            parts[agg_id] = part
            corrected = self.joint_rand_seed(ctx, parts)
            joint = self.joint_rands(ctx, corrected)
        query = self.query_rands(verify_key, ctx, nonce)
        pl, ql, jl = self.flp.PROOF_LEN, self.flp.QUERY_RAND_LEN, self.flp.JOINT_RAND_LEN
        verifiers = np.concatenate([
            self.flp.query(meas, proofs[i * pl:(i + 1) * pl], query[i * ql:(i + 1) * ql],
                           joint[i * jl:(i + 1) * jl], self.SHARES)
            for i in range(self.PROOFS)])
        return VerifyState(out_share, corrected), VerifierShare(verifiers, part)

    def verifier_shares_to_message(self, ctx: bytes, verifier_shares: list[VerifierShare]
                                   ) -> bytes | None:
        """Sum the verifier shares and decide every proof; the joint randomness seed both
        aggregators must have used. Raises :class:`InvalidProofError` on a rejection."""
        f = self.field
        total = f.zeros(self.flp.VERIFIER_LEN * self.PROOFS)
        for share in verifier_shares:
            total = f.add(total, share.verifiers)
        vl = self.flp.VERIFIER_LEN
        for i in range(self.PROOFS):
            if not self.flp.decide(total[i * vl:(i + 1) * vl]):
                raise InvalidProofError(f"proof {i} of {self.PROOFS} failed the verifier "
                                        "check: the contribution is invalid; refuse it")
        if not self.uses_joint_rand:
            return None
        parts = [share.joint_rand_part for share in verifier_shares]
        if any(p is None for p in parts):
            raise MalformedUploadError("a verifier share lacks its joint randomness part")
        return self.joint_rand_seed(ctx, parts)  # type: ignore[arg-type]

    def verify_next(self, state: VerifyState, message: bytes | None) -> np.ndarray:
        """The output share, if the joint randomness the client used is the one the
        aggregators derived; else :class:`InvalidProofError`."""
        if message != state.corrected_joint_rand_seed:
            raise InvalidProofError("joint randomness check failed: the client's public share "
                                    "does not match its input shares; refuse the report")
        return state.out_share

    def aggregate(self, out_shares: list[np.ndarray]) -> np.ndarray:
        """The sum of output shares (an aggregate share)."""
        agg = self.field.zeros(self.flp.OUTPUT_LEN)
        for share in out_shares:
            agg = self.field.add(agg, share)
        return agg

    def unshard(self, agg_shares: list[np.ndarray], num_measurements: int) -> object:
        return self.flp.circuit.decode(self.aggregate(agg_shares), num_measurements)

    # -- encodings (§7.2.7) ---------------------------------------------------------------
    def encode_input_share(self, share: LeaderShare | HelperShare) -> bytes:
        if isinstance(share, LeaderShare):
            out = self.field.encode(share.measurement) + self.field.encode(share.proofs)
        else:
            out = share.seed
        return out + (share.blind or b"")

    def input_share_size(self, agg_id: int) -> int:
        """Bytes of aggregator ``agg_id``'s encoded input share."""
        seed, size = self.xof.SEED_SIZE, self.field.ENCODED_SIZE
        blind = seed if self.uses_joint_rand else 0
        if agg_id == 0:
            return size * (self.flp.MEAS_LEN + self.flp.PROOF_LEN * self.PROOFS) + blind
        return seed + blind

    def decode_input_share(self, agg_id: int, data: bytes) -> LeaderShare | HelperShare:
        if len(data) != self.input_share_size(agg_id):
            raise MalformedUploadError(f"input share {agg_id} has {len(data)} bytes, "
                                       f"expected {self.input_share_size(agg_id)}")
        seed, size = self.xof.SEED_SIZE, self.field.ENCODED_SIZE
        blind = data[-seed:] if self.uses_joint_rand else None
        if agg_id > 0:
            return HelperShare(data[:seed], blind)
        cut = size * self.flp.MEAS_LEN
        end = cut + size * self.flp.PROOF_LEN * self.PROOFS
        return LeaderShare(self.field.decode(data[:cut]), self.field.decode(data[cut:end]),
                           blind)

    def encode_public_share(self, public_share: list[bytes] | None) -> bytes:
        return b"".join(public_share) if public_share else b""

    def decode_public_share(self, data: bytes) -> list[bytes] | None:
        seed = self.xof.SEED_SIZE
        expected = self.SHARES * seed if self.uses_joint_rand else 0
        if len(data) != expected:
            raise MalformedUploadError(f"public share has {len(data)} bytes, expected "
                                       f"{expected}")
        if not self.uses_joint_rand:
            return None
        return [data[i:i + seed] for i in range(0, len(data), seed)]

    def encode_verifier_share(self, share: VerifierShare) -> bytes:
        return self.field.encode(share.verifiers) + (share.joint_rand_part or b"")

    def decode_verifier_share(self, data: bytes) -> VerifierShare:
        cut = self.field.ENCODED_SIZE * self.flp.VERIFIER_LEN * self.PROOFS
        seed = self.xof.SEED_SIZE if self.uses_joint_rand else 0
        if len(data) != cut + seed:
            raise MalformedUploadError(f"verifier share has {len(data)} bytes, expected "
                                       f"{cut + seed}")
        return VerifierShare(self.field.decode(data[:cut]), data[cut:] if seed else None)

    @staticmethod
    def encode_verifier_message(message: bytes | None) -> bytes:
        return message or b""

    @staticmethod
    def decode_verifier_message(data: bytes) -> bytes | None:
        return data or None
