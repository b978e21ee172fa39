"""What a secure-sum proxy publishes for clients (``GET /v1/round``, ``published``): the
one name both sides use, in a module neither role owns."""

__all__ = ["PUBLISHED_KEY"]

PUBLISHED_KEY = "secure_sum_proxy_key"
"""The field of the service proxy's published record holding its X25519 key (hex)."""
