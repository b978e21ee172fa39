"""The client's step of the secure sum: clip, quantise, add the noise share, split, seal.

    x  -> clip:      x * min(1, c / ||x||_2)   or   clip(x, -c, c)            (L2 or Linf)
       -> quantise:  v_j = floor(gamma x_j) + Bernoulli(gamma x_j - floor(gamma x_j))
                     (unbiased: E v_j = gamma x_j; |v_j| <= ceil(gamma c))
       -> noise:     v += z, z the client's integer noise share (e.g. Skellam)
       -> split:     r = ChaCha20(seed) mod q, s = v - r mod q      (v = r + s mod q)
       -> seal:      seed to the proxy, s to the server, one upload

``s`` alone is uniform on ``Z_q^d`` (a one-time pad under ``r``), so the server learns
nothing from one share; the proxy sees only ``seed``. The rounding draws from the
``numpy.random.Generator`` passed in: seeded in a simulation, a CSPRNG on a device
(:func:`dprec.random.secure_generator`). Seeds and message ids always come from the OS CSPRNG
(``secrets``): they never change the sum, so simulations stay reproducible.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

import numpy as np

from dprec.errors import check_int
from dprec.protocol.secure_sum.errors import MalformedUploadError, SecureSumError
from dprec.protocol.secure_sum.messages import (
    MESSAGE_ID_BYTES,
    Upload,
    associated_data,
    run_id,
)
from dprec.protocol.secure_sum.params import SecureSumParams
from dprec.protocol.secure_sum.ring import SEED_BYTES, encode_elements, expand_mask
from dprec.protocol.secure_sum.sealed import KEY_BYTES, seal

__all__ = ["NoiseShare", "SecureSumClient", "check_public_key", "clip", "quantise"]

NoiseShare = Callable[[int, np.random.Generator], np.ndarray]
"""``(dimension, rng) -> integer vector``: one client's share of the distributed noise."""


def clip(x: np.ndarray, bound: float, norm: str) -> np.ndarray:
    """``x`` clipped to ``||x||_2 <= bound`` (scaled down) or ``||x||_inf <= bound``."""
    x = np.asarray(x, dtype=np.float64)
    if norm == "linf":
        return np.clip(x, -bound, bound)
    length = float(np.linalg.norm(x))
    return x * (bound / length) if length > bound else x


def quantise(x: np.ndarray, gamma: float, limit: float, rng: np.random.Generator
             ) -> np.ndarray:
    """Unbiased randomised rounding of ``gamma * x`` (clipped to ``[-limit, limit]`` first,
    ``limit = gamma * c``, so float error cannot pass ``ceil(limit)``), as ``int64``. Works
    on a vector or a batch of rows."""
    y = np.clip(gamma * np.asarray(x, dtype=np.float64), -limit, limit)
    low = np.floor(y)
    return (low + (rng.random(y.shape) < y - low)).astype(np.int64)


def check_public_key(key: object, role: str) -> bytes:
    """``key`` if it is a usable raw X25519 public key of ``role``, else
    :class:`SecureSumError`: 32 bytes, and not a low-order point (whose shared secret is
    all zeros: a box sealed to it would be readable by anyone). A device receives keys from
    the network: hostile input."""
    if not isinstance(key, bytes | bytearray) or len(key) != KEY_BYTES:
        size = len(key) if isinstance(key, bytes | bytearray) else type(key).__name__
        raise SecureSumError(f"the {role}'s public key must be {KEY_BYTES} raw bytes, got "
                             f"{size}: refuse to seal to it")
    key = bytes(key)
    try:
        seal(key, b"", b"")  # an exchange with a fresh key: refused for a low-order point
    except MalformedUploadError:
        raise SecureSumError(f"the {role}'s public key is a low-order point (an all-zero "
                             "shared secret): refuse to seal to it") from None
    return key


class SecureSumClient:
    """A device's side of one secure-sum deployment (the proxy's and server's public keys)."""

    def __init__(self, params: SecureSumParams, proxy_key: bytes, server_key: bytes) -> None:
        proxy_key = check_public_key(proxy_key, "proxy")
        server_key = check_public_key(server_key, "server")
        if proxy_key == server_key:
            raise SecureSumError("the proxy and the server must hold different keys: with one "
                                 "key, one party could open both shares")
        self.params = params
        self.proxy_key = proxy_key
        self.server_key = server_key
        self.run = run_id(proxy_key, server_key)
        """The run id every box binds (:func:`~dprec.protocol.secure_sum.messages.run_id`)."""

    def prepare(self, x: np.ndarray, rng: np.random.Generator,
                noise: NoiseShare | None = None) -> np.ndarray:
        """``v``: ``x`` clipped, quantised and noised (``int64``, what the sum adds up)."""
        p = self.params
        x = np.asarray(x, dtype=np.float64)
        if x.shape != (p.dimension,) or not np.isfinite(x).all():
            raise SecureSumError(f"a contribution is a finite vector of {p.dimension} numbers, "
                                 f"got shape {x.shape}")
        v = quantise(clip(x, p.clip, p.norm), p.gamma, p.gamma * p.clip, rng)
        if noise is not None:
            z = np.asarray(noise(p.dimension, rng))
            if z.shape != v.shape or not np.issubdtype(z.dtype, np.integer):
                raise SecureSumError(f"a noise share is an integer vector of {p.dimension}, "
                                     f"got {z.dtype} of shape {z.shape}")
            v = v + z.astype(np.int64)
        return v

    def seal(self, v: np.ndarray, round_id: int) -> bytes:
        """Split ``v`` into a proxy seed and a server share and seal both: the upload."""
        p = self.params
        check_int("round_id", round_id, 0)
        v = np.asarray(v)
        half = p.modulus // 2
        if v.shape != (p.dimension,) or (np.abs(v) >= half).any():
            raise SecureSumError(f"v must be {p.dimension} integers of magnitude < q/2 = {half}")
        seed = secrets.token_bytes(SEED_BYTES)
        message_id = secrets.token_bytes(MESSAGE_ID_BYTES)
        mask = np.uint64(p.modulus - 1)
        share = (v.astype(np.int64).view(np.uint64) - expand_mask(seed, p.dimension, p.bits)
                 ) & mask
        seed_box = seal(self.proxy_key, seed,
                        associated_data(self.run, round_id, message_id, "proxy"))
        share_box = seal(self.server_key, encode_elements(share, p.element_bytes),
                         associated_data(self.run, round_id, message_id, "server"))
        return Upload(round_id, message_id, seed_box, share_box).to_bytes()

    def contribute(self, x: np.ndarray, round_id: int, rng: np.random.Generator,
                   noise: NoiseShare | None = None) -> bytes:
        """:meth:`prepare` then :meth:`seal`: one round's upload for ``x``."""
        return self.seal(self.prepare(x, rng, noise), round_id)
