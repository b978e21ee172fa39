"""What a secure-sum proxy publishes for clients (``GET /v1/round``, ``published``): the
one name both sides use, in a module neither role owns, and the check of a hex key read
from such a record (or from an operator)."""

from dprec.errors import DprecError

__all__ = ["PUBLISHED_KEY", "hex_key"]

PUBLISHED_KEY = "secure_sum_proxy_key"
"""The field of the service proxy's published record holding its X25519 key (hex)."""


def hex_key(raw: object, n_bytes: int, refusal: str) -> bytes:
    """``raw`` as hex of exactly ``n_bytes`` bytes, else DprecError(``refusal``)."""
    try:
        key = bytes.fromhex(raw) if isinstance(raw, str) else b""
    except ValueError:
        key = b""
    if len(key) != n_bytes:
        raise DprecError(refusal)
    return key
