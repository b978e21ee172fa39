"""The refusals of the secure sum: one error class per rule, each a :class:`DprecError`
whose message says what was refused and what to do."""

from __future__ import annotations

from dprec.errors import DprecError

__all__ = [
    "BelowThresholdError", "DuplicateSenderError", "InvalidProofError", "MalformedUploadError",
    "OversizedUploadError", "ReplayError", "RoundClosedError", "SealedBoxError",
    "SecureSumError", "TamperedCiphertextError", "WrongRecipientError", "WrongRoundError",
]


class SecureSumError(DprecError):
    """A secure-sum step refused its input or its parameters."""


class SealedBoxError(SecureSumError):
    """A sealed box could not be opened."""


class WrongRecipientError(SealedBoxError):
    """The box was sealed to another public key than the one trying to open it."""


class TamperedCiphertextError(SealedBoxError):
    """The AEAD tag does not verify: the ciphertext, or the round, message id or role bound
    into its associated data, was changed."""


class MalformedUploadError(SecureSumError):
    """An upload or share does not parse as the protocol's format, or its length or values
    are not those the round's parameters fix."""


class OversizedUploadError(MalformedUploadError):
    """An upload or share is longer than the round's parameters allow."""


class WrongRoundError(SecureSumError):
    """A message belongs to another round than the one being aggregated."""


class ReplayError(SecureSumError):
    """A message id was seen before in this round."""


class DuplicateSenderError(SecureSumError):
    """A sender uploaded twice in one round (one upload per sender and round)."""


class BelowThresholdError(SecureSumError):
    """Fewer distinct senders than the anonymity threshold: nothing is released."""


class RoundClosedError(SecureSumError):
    """The round already released its one batch: it takes no more uploads or releases."""


class InvalidProofError(SecureSumError):
    """A contribution's validity proof (Prio3, draft-irtf-cfrg-vdaf §7) was rejected: the
    vector is out of bounds, a share was tampered with, or the joint randomness does not
    match. Refuse that contribution, count it with this reason; the round goes on."""
