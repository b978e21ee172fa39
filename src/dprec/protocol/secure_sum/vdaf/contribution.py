"""The API the secure-sum protocol calls to prove and verify a contribution (issue 31 §1).

Roles (Prio3 with two aggregators, draft-irtf-cfrg-vdaf-20 §7.2): the client shards its
noised integer vector ``y`` into a public share (two 32-byte joint-randomness parts), the
Leader's input share (measurement share, ``PROOFS`` proof shares, a blind: sealed to the
server) and the Helper's input share (a seed and a blind, 64 bytes: sealed to the proxy).
Each aggregator computes a verifier share (:meth:`ContributionCheck.prep_init`); the two
verifier shares give the verifier message or a refusal
(:meth:`ContributionCheck.prep_shares_to_prep`); each aggregator checks the message against
its own joint-randomness seed and keeps its output share (:meth:`ContributionCheck.prep_finish`).
The output shares are additive shares of ``y`` in Field64; their sums over the accepted
reports (:meth:`ContributionCheck.aggregate`) add up to the integer sum
(:meth:`ContributionCheck.unshard`).

Soundness (draft §9.8): with ``PROOFS`` proofs an invalid ``y`` passes w.p. at most
``eps1^PROOFS``, ``eps1 = (sum_g D_g (p_g - 1) + c_jr + 1) / (|F| - max p)`` (the gadget
tests of BBCGGI19 Thm 4.3; ``c_jr`` the degree of the joint-randomness combinations; 1 for
the output reduction). The draft asks circuits with joint randomness on Field64 for at least
three proofs and ``~2^-128``; :func:`choose_proofs` takes the smallest ``PROOFS >= 3``
reaching ``2^-128``, so an offline search over ``2^g`` joint-randomness seeds still leaves
``2^(g - 128)``.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from dprec.protocol.secure_sum.errors import SecureSumError
from dprec.protocol.secure_sum.vdaf.dprec_circuits import MAX_POLYNOMIAL_DEGREE, BoundedVector
from dprec.protocol.secure_sum.vdaf.flp import Flp
from dprec.protocol.secure_sum.vdaf.noise_bounds import NoiseTruncation, l2_bound_sq
from dprec.protocol.secure_sum.vdaf.prio3 import Prio3, VerifyState

__all__ = ["DP_POP_ID", "BOUNDED_RANGE_ID", "ContributionCheck", "Report",
           "bounded_range_check", "choose_proofs", "dp_pop_check", "smallest_range_circuit",
           "soundness_log2"]

DP_POP_ID = 0xFFFF0D01
"""Private-use Prio3 algorithm id (draft §10: 0xFFFF0000 and up) of dp-pop's check."""
BOUNDED_RANGE_ID = 0xFFFF0D02
"""Private-use Prio3 algorithm id of the bounded-range (dpals, dp-fedavg) check."""
LEADER, HELPER = 0, 1


def soundness_log2(flp: Flp, circuit: BoundedVector) -> float:
    """``log2 eps1``: one proof's soundness error (module docstring)."""
    terms = sum(g.DEGREE * (p - 1) for g, p in zip(circuit.GADGETS, flp.wire_lens, strict=True))
    terms += circuit.circuit_soundness_terms()
    return math.log2(terms) - math.log2(circuit.field.MODULUS - max(flp.wire_lens))


def choose_proofs(flp: Flp, circuit: BoundedVector, target_log2: float = -128.0) -> int:
    """The smallest ``PROOFS >= 3`` with ``eps1^PROOFS <= 2^target_log2``."""
    per_proof = soundness_log2(flp, circuit)
    return max(3, math.ceil(target_log2 / per_proof))


@dataclasses.dataclass(frozen=True)
class Report:
    """One client's encoded report: what travels, and to whom."""

    public_share: bytes
    """To both aggregators (in the clear or inside both boxes)."""
    leader_share: bytes
    """Sealed to the server (the Leader)."""
    helper_share: bytes
    """Sealed to the proxy (the Helper): 32-byte seed and 32-byte blind."""


class ContributionCheck:
    """Prio3 over a :class:`BoundedVector` with ``PROOFS`` chosen for ``2^-128``."""

    def __init__(self, circuit: BoundedVector, algorithm_id: int, name: str,
                 proofs: int | None = None, truncation: NoiseTruncation | None = None,
                 l2_tv: float = 0.0) -> None:
        flp = Flp(circuit)
        self.truncation = truncation
        self.l2_tv = float(l2_tv)
        self.circuit = circuit
        self.proofs = choose_proofs(flp, circuit) if proofs is None else int(proofs)
        self.vdaf = Prio3(circuit, self.proofs, algorithm_id, shares=2)
        self.ctx = b"dprec/secure-sum/" + name.encode()
        self.name = name

    @property
    def rand_size(self) -> int:
        """Bytes of client randomness :meth:`shard` takes (``os.urandom`` on a device)."""
        return self.vdaf.RAND_SIZE

    def delta_cost(self, epsilon: float) -> float:
        """What the accountant adds to ``delta`` for the honest clients' truncated noise:
        ``(1 + e^epsilon) n (eta + eta_2)`` (:mod:`.noise_bounds`; ``eta_2`` the L2 term)."""
        if self.truncation is None:
            return 0.0
        tv = self.truncation.clients * (self.truncation.per_client_tv + self.l2_tv)
        return (1.0 + math.exp(epsilon)) * tv

    @property
    def soundness_log2(self) -> float:
        """``log2`` of the probability that an invalid vector passes all proofs."""
        return self.proofs * soundness_log2(self.vdaf.flp, self.circuit)

    def refusals(self, ys: np.ndarray) -> np.ndarray:
        """Per row of ``ys`` (m x d integers), why the proof refuses it (``"range"``,
        ``"sum"``, ``"l2"``) or ``""`` where it verifies: the circuit's own predicate on the
        plaintext (:meth:`BoundedVector.refusals`)."""
        return self.circuit.refusals(ys)

    def valid_plaintext(self, y: np.ndarray) -> bool:
        """Whether the integer vector ``y`` is one whose proof verifies."""
        return not self.circuit.refusals(np.asarray(y)[None, :])[0]

    def shard(self, y: np.ndarray, nonce: bytes, rand: bytes) -> Report:
        """The client's report of the integer vector ``y`` (``nonce``: 16 bytes, unique per
        report; ``rand``: :attr:`rand_size` fresh random bytes)."""
        try:
            meas = self.circuit.encode(y)
        except ValueError as e:
            raise SecureSumError(f"this contribution breaks the {self.name} check ({e}): an "
                                 "honest client clips, quantises and truncates its noise "
                                 "first") from None
        public, (leader, helper) = self.vdaf.shard_encoded(self.ctx, meas, nonce, rand)
        v = self.vdaf
        return Report(v.encode_public_share(public), v.encode_input_share(leader),
                      v.encode_input_share(helper))

    def prep_init(self, agg_id: int, verify_key: bytes, nonce: bytes, public_share: bytes,
                  input_share: bytes) -> tuple[VerifyState, bytes]:
        """Aggregator ``agg_id`` (0 server, 1 proxy): its state and its encoded verifier
        share. ``verify_key``: 32 bytes the two aggregators share and no client knows.
        Raises :class:`~dprec.protocol.secure_sum.errors.MalformedUploadError` on a bad
        encoding."""
        if len(verify_key) != self.vdaf.VERIFY_KEY_SIZE:
            raise ValueError(f"the verify key has {self.vdaf.VERIFY_KEY_SIZE} bytes")
        v = self.vdaf
        state, share = v.verify_init(verify_key, self.ctx, agg_id, nonce,
                                     v.decode_public_share(public_share),
                                     v.decode_input_share(agg_id, input_share))
        return state, v.encode_verifier_share(share)

    def prep_shares_to_prep(self, leader_verifier_share: bytes, helper_verifier_share: bytes
                            ) -> bytes:
        """The verifier message (the joint-randomness seed, 32 bytes), or
        :class:`~dprec.protocol.secure_sum.errors.InvalidProofError`: refuse the report."""
        v = self.vdaf
        shares = [v.decode_verifier_share(leader_verifier_share),
                  v.decode_verifier_share(helper_verifier_share)]
        return v.encode_verifier_message(v.verifier_shares_to_message(self.ctx, shares))

    def prep_finish(self, state: VerifyState, message: bytes) -> np.ndarray:
        """The aggregator's output share, or ``InvalidProofError`` (joint randomness)."""
        return self.vdaf.verify_next(state, self.vdaf.decode_verifier_message(message))

    def aggregate(self, out_shares: list[np.ndarray]) -> bytes:
        """One aggregator's encoded sum of its accepted output shares."""
        return self.vdaf.field.encode(self.vdaf.aggregate(out_shares))

    def unshard(self, agg_shares: list[bytes], count: int) -> np.ndarray:
        """The integer sum (``int64``) of the ``count`` accepted vectors."""
        return self.vdaf.unshard([self.vdaf.field.decode(a) for a in agg_shares], count)

    def sizes(self) -> dict[str, int]:
        """Bytes of every message of one report."""
        v, size = self.vdaf, self.vdaf.field.ENCODED_SIZE
        verifier = size * v.flp.VERIFIER_LEN * v.PROOFS + (32 if v.uses_joint_rand else 0)
        public = 2 * 32 if v.uses_joint_rand else 0
        leader, helper = v.input_share_size(LEADER), v.input_share_size(HELPER)
        return {"public_share": public, "leader_share": leader, "helper_share": helper,
                "upload": public + leader + helper, "verifier_share": verifier,
                "verifier_message": 32 if v.uses_joint_rand else 0,
                "measurement_elements": v.flp.MEAS_LEN,
                "proof_elements": v.flp.PROOF_LEN * v.PROOFS}


def dp_pop_check(dimension: int, k: int, truncation: NoiseTruncation, l2: bool = True
                 ) -> ContributionCheck:
    """dp-pop: ``y = v + z``, ``v`` k-hot (at most ``k`` ones), ``|z_j| <= T``,
    ``|sum z| <= S``: every ``y_j in [-T, 1 + T]``, ``sum y in [-S, k + S]`` and (``l2``)
    ``||y||^2 <= B^2``, ``B = sqrt(k) + ||z||``'s bound
    (:func:`~dprec.protocol.secure_sum.vdaf.noise_bounds.l2_bound_sq`). The sum bounds only
    the net mass (``+16`` here and ``-15`` there cancel); the L2 bound is what stops one
    client from moving many coordinates by the full range."""
    t, s = truncation.coordinate_bound, truncation.sum_bound
    bound_sq, eta = l2_bound_sq(math.sqrt(k), truncation) if l2 else (None, 0.0)
    circuit = BoundedVector(dimension, -t, 1 + t, sum_range=(-s, int(k) + s),
                            l2_bound_sq=bound_sq)
    return ContributionCheck(circuit, DP_POP_ID, "dp-pop", truncation=truncation, l2_tv=eta)


def bounded_range_check(dimension: int, bound: int, truncation: NoiseTruncation,
                        l2_bound_sq: int | None = None, l2_tv: float = 0.0
                        ) -> ContributionCheck:
    """dpals / dp-fedavg: ``y = v + z``, ``|v_j| <= C``, ``|z_j| <= T``: every ``y_j in
    [-(C + T), C + T]`` (with digits, up to ``B^L - (2 (C + T) + 1)`` more above:
    :class:`BoundedVector`), and ``||y||_2^2 <= l2_bound_sq`` when given
    (:func:`~dprec.protocol.secure_sum.vdaf.noise_bounds.l2_bound_sq`, whose ``eta_2`` is
    ``l2_tv``)."""
    r = int(bound) + truncation.coordinate_bound
    try:
        circuit = smallest_range_circuit(dimension, -r, r, l2_bound_sq)
    except ValueError as e:
        raise SecureSumError(
            f"validity=prio3 cannot check this round in Field64 ({e}): {dimension} "
            f"coordinates within +-{r}, ||y||^2 <= {l2_bound_sq} (d r^2 and B^2 must stay "
            f"below p/4, about 2^62); lower gamma or the clip, or set validity=none (then "
            f"nothing bounds a malicious client's upload)") from None
    return ContributionCheck(circuit, BOUNDED_RANGE_ID, "bounded-range",
                             truncation=truncation, l2_tv=l2_tv)


def smallest_range_circuit(dimension: int, low: int, high: int,
                           l2_bound_sq: int | None = None) -> BoundedVector:
    """Of the range proofs whose gadget degree is at most ``MAX_POLYNOMIAL_DEGREE`` (one
    polynomial, 2 to 6 digits, or bits), the one with the fewest upload elements
    ``MEAS_LEN + 3 PROOF_LEN``; ties to the earlier in that order."""
    options = []
    if high - low + 2 <= MAX_POLYNOMIAL_DEGREE:
        options.append(BoundedVector(dimension, low, high, l2_bound_sq=l2_bound_sq,
                                     range_proof="polynomial"))
    for digits in range(2, 7):
        candidate = BoundedVector(dimension, low, high, l2_bound_sq=l2_bound_sq,
                                  range_proof="digits", digits=digits)
        if candidate.base + 1 <= MAX_POLYNOMIAL_DEGREE and candidate.base > 2:
            options.append(candidate)
    options.append(BoundedVector(dimension, low, high, l2_bound_sq=l2_bound_sq,
                                 range_proof="bits"))
    return min(options, key=lambda c: c.MEAS_LEN + 3 * Flp(c).PROOF_LEN)
