"""The sealed box opens only with the recipient's key and the same associated data."""

from __future__ import annotations

import pytest

from dprec.protocol.secure_sum.errors import (
    MalformedUploadError,
    TamperedCiphertextError,
    WrongRecipientError,
)
from dprec.protocol.secure_sum.sealed import OVERHEAD, KeyPair, open_box, seal


def test_a_box_opens_with_its_key_and_aad_only():
    keys = KeyPair()
    box = seal(keys.public, b"share", b"round 1")
    assert len(box) == len(b"share") + OVERHEAD == 5 + 56
    assert open_box(keys, box, b"round 1") == b"share"
    assert seal(keys.public, b"share", b"round 1") != box  # fresh ephemeral key each time
    with pytest.raises(TamperedCiphertextError):
        open_box(keys, box, b"round 2")
    with pytest.raises(TamperedCiphertextError):
        open_box(keys, box[:-1] + bytes([box[-1] ^ 0x80]), b"round 1")
    with pytest.raises(TamperedCiphertextError):  # the ephemeral key swapped
        open_box(keys, KeyPair().public + box[32:], b"round 1")
    with pytest.raises(WrongRecipientError):
        open_box(KeyPair(), box, b"round 1")
    with pytest.raises(MalformedUploadError):
        open_box(keys, box[:OVERHEAD - 1], b"round 1")


@pytest.mark.parametrize("recipient", [bytes(32), b"\1" + bytes(31), b"\1" * 31])
def test_sealing_to_a_low_order_or_short_key_is_refused_before_any_box(recipient):
    """The all-zero point and the point 1 are of low order (their shared secret is all
    zeros, readable by anyone); a 31-byte key is not a key."""
    with pytest.raises(MalformedUploadError, match="low-order|32 bytes"):
        seal(recipient, b"share", b"round 1")
