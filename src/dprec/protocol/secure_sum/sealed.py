"""A sealed box: public-key encryption to one recipient, HPKE-style (RFC 9180 base mode,
built from ``cryptography``'s primitives, nothing hand-rolled).

    seal(pk_R, m, aad):  e <- X25519 fresh key pair (OS CSPRNG)
                         Z = X25519(e, pk_R)
                         key || nonce = HKDF-SHA256(Z, info = LABEL || pk_E || pk_R)[:44]
                         box = pk_E || id(pk_R) || ChaCha20-Poly1305(key, nonce, m, aad)

``id(pk_R)`` is the first 8 bytes of SHA-256(pk_R), so a box sent to the wrong recipient is
told apart from a tampered one before any decryption. ``aad`` is authenticated, not sent:
the caller rebuilds it from the round id, the message id and the recipient's role
(:func:`dprec.protocol.secure_sum.messages.associated_data`), so a box replayed into another
round, under another message id or to the other role fails its tag. Each box has its own
ephemeral key, so the key and nonce are used once. Confidentiality and integrity against
anyone without the recipient's private key rest on X25519 (gap-DH) and ChaCha20-Poly1305;
the box does not authenticate its sender (the proxy knows senders; the server must not).
"""

from __future__ import annotations

import hashlib

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from dprec.protocol.secure_sum.errors import (
    MalformedUploadError,
    TamperedCiphertextError,
    WrongRecipientError,
)

__all__ = ["OVERHEAD", "KeyPair", "key_id", "open_box", "seal"]

LABEL = b"dprec secure-sum sealed box v1"
KEY_BYTES = 32
KEY_ID_BYTES = 8
TAG_BYTES = 16
OVERHEAD = KEY_BYTES + KEY_ID_BYTES + TAG_BYTES
"""Bytes a sealed box adds to its plaintext: ephemeral key, recipient id, AEAD tag."""


def _raw(public: X25519PublicKey) -> bytes:
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(public: bytes) -> bytes:
    """The 8-byte recipient id of a raw X25519 public key."""
    return hashlib.sha256(public).digest()[:KEY_ID_BYTES]


class KeyPair:
    """An X25519 key pair of one role (proxy or server), from the OS CSPRNG."""

    def __init__(self, private: X25519PrivateKey | None = None) -> None:
        self.private = private if private is not None else X25519PrivateKey.generate()
        self.public = _raw(self.private.public_key())
        """The raw 32-byte public key, what clients are given."""

    @classmethod
    def from_raw(cls, private: bytes) -> KeyPair:
        """The key pair of a raw 32-byte private key (as :meth:`private_raw` gives it)."""
        if len(private) != KEY_BYTES:
            raise MalformedUploadError(f"a private key has {KEY_BYTES} bytes, got "
                                       f"{len(private)}")
        return cls(X25519PrivateKey.from_private_bytes(private))

    def private_raw(self) -> bytes:
        """The raw 32-byte private key (for the role's own durable store only)."""
        return self.private.private_bytes(serialization.Encoding.Raw,
                                          serialization.PrivateFormat.Raw,
                                          serialization.NoEncryption())


def _key_and_nonce(shared: bytes, ephemeral: bytes, recipient: bytes) -> tuple[bytes, bytes]:
    okm = HKDF(algorithm=hashes.SHA256(), length=44, salt=None,
               info=LABEL + ephemeral + recipient).derive(shared)
    return okm[:32], okm[32:]


def seal(recipient: bytes, plaintext: bytes, aad: bytes) -> bytes:
    """``plaintext`` sealed to the raw X25519 public key ``recipient``, ``aad`` bound in;
    :class:`MalformedUploadError` for a key of the wrong length or a low-order point."""
    if len(recipient) != KEY_BYTES:
        raise MalformedUploadError(f"a public key has {KEY_BYTES} bytes, got {len(recipient)}")
    return _seal_from(X25519PrivateKey.generate(), recipient, plaintext, aad)


def _seal_with_ephemeral(ephemeral_private: bytes, recipient: bytes, plaintext: bytes,
                         aad: bytes) -> bytes:
    """TEST VECTORS ONLY (the TypeScript SDK's conformance fixtures): :func:`seal` under a
    given raw ephemeral private key. Reusing one reuses the AEAD key and nonce; the protocol
    never calls this."""
    if len(recipient) != KEY_BYTES:
        raise MalformedUploadError(f"a public key has {KEY_BYTES} bytes, got {len(recipient)}")
    if len(ephemeral_private) != KEY_BYTES:
        raise MalformedUploadError(f"a private key has {KEY_BYTES} bytes, got "
                                   f"{len(ephemeral_private)}")
    return _seal_from(X25519PrivateKey.from_private_bytes(ephemeral_private), recipient,
                      plaintext, aad)


def _seal_from(ephemeral: X25519PrivateKey, recipient: bytes, plaintext: bytes,
               aad: bytes) -> bytes:
    eph = _raw(ephemeral.public_key())
    try:
        shared = ephemeral.exchange(X25519PublicKey.from_public_bytes(recipient))
    except ValueError:  # cryptography refuses the all-zero secret of a low-order point
        raise MalformedUploadError(
            "the recipient's public key is a low-order point (an all-zero shared secret: a "
            "box sealed to it would be readable by anyone): refuse to seal to it") from None
    key, nonce = _key_and_nonce(shared, eph, recipient)
    return eph + key_id(recipient) + ChaCha20Poly1305(key).encrypt(nonce, plaintext, aad)


def open_box(keys: KeyPair, box: bytes, aad: bytes) -> bytes:
    """The plaintext of ``box``; raises :class:`WrongRecipientError` if it was sealed to
    another key, :class:`TamperedCiphertextError` if the tag fails (box or ``aad`` changed)."""
    if len(box) < OVERHEAD:
        raise MalformedUploadError(f"a sealed box has at least {OVERHEAD} bytes, got {len(box)}")
    eph, kid, ct = box[:KEY_BYTES], box[KEY_BYTES:KEY_BYTES + KEY_ID_BYTES], \
        box[KEY_BYTES + KEY_ID_BYTES:]
    if kid != key_id(keys.public):
        raise WrongRecipientError(
            "the box was sealed to another public key: the client must seal to this role's "
            "current key")
    try:
        shared = keys.private.exchange(X25519PublicKey.from_public_bytes(eph))
    except ValueError as e:  # a low-order point gives an all-zero secret
        raise TamperedCiphertextError(f"the box's ephemeral key is invalid: {e}") from e
    key, nonce = _key_and_nonce(shared, eph, keys.public)
    try:
        return ChaCha20Poly1305(key).decrypt(nonce, ct, aad)
    except InvalidTag:
        raise TamperedCiphertextError(
            "the box's tag does not verify: it was changed in transit, or it belongs to "
            "another run, round, message id or role; drop it") from None
