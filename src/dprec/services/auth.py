"""Secrets of the services: the proxy-server shared secret and per-client tokens.

- The shared secret authenticates the proxy to the server (and the operator to the server,
  for starting it). The proxy's operator has a secret of its own (``--operator-secret-file``
  or ``$DPREC_OPERATOR_SECRET``, distinct from the shared one): only it closes a round on the
  proxy, so the server, which holds the shared secret, cannot release a round early. Each
  is read at start-up from a file (``--secret-file``) or an environment variable, never
  hard-coded and never logged, and compared in constant time (:func:`hmac.compare_digest`).
- A client's token is ``base64url(HMAC-SHA256(token key, "dprec-client-token-v1:" + id))``.
  The proxy holds only the token key and recomputes the token of the id a request names,
  so it needs no token table; whoever enrols clients (the operator, or ``dprec simulate``)
  derives their tokens with the same key (``dprec serve token``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from pathlib import Path

from dprec.errors import DprecError

__all__ = ["MIN_SECRET_BYTES", "bearer", "client_token", "read_secret", "same_secret"]

MIN_SECRET_BYTES = 16
"""A secret or key shorter than this is refused (128 bits)."""
_TOKEN_LABEL = b"dprec-client-token-v1:"


def read_secret(path: Path | str | None, env: str | None = None, what: str = "secret") -> bytes:
    """The secret in ``path`` (surrounding whitespace stripped), else in ``$env``.

    Raises :class:`DprecError` when neither is given or the secret is shorter than
    :data:`MIN_SECRET_BYTES`; the message names where it looked, never the secret.
    """
    if path is not None:
        try:
            value = Path(path).read_bytes().strip()
        except OSError as e:
            raise DprecError(f"cannot read the {what} file {path}: {e.strerror}") from None
        where = f"file {path}"
    elif env is not None and os.environ.get(env):
        value = os.environ[env].strip().encode()
        where = f"${env}"
    else:
        hint = f" or set ${env}" if env else ""
        raise DprecError(f"the {what} is required: pass its file{hint}")
    if len(value) < MIN_SECRET_BYTES:
        raise DprecError(f"the {what} in {where} must be >= {MIN_SECRET_BYTES} bytes, "
                         f"got {len(value)}")
    return value


def same_secret(given: str | bytes | None, expected: bytes) -> bool:
    """Constant-time comparison of a presented secret with the expected one."""
    if given is None:
        return False
    raw = given.encode() if isinstance(given, str) else given
    return hmac.compare_digest(raw, expected)


def bearer(header: str | None) -> str | None:
    """The credential of an ``Authorization: Bearer <credential>`` header, else None."""
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def client_token(key: bytes, client_id: int) -> str:
    """The token of client ``client_id`` under the proxy's token key."""
    mac = hmac.new(key, _TOKEN_LABEL + str(int(client_id)).encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()
