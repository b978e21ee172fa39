"""A device's step in any secure-sum system (dp-pop, dpals, dp-fedavg), written once: the
system gives its vector, its round's parameters and its noise segments; this module checks
the keys, adds the client's Skellam shares and seals (:class:`SecureSumClient`, the one
place a later proof of validity is added).

    x  (the system's vector: a k-hot row, per-item statistics, a clipped update)
       -> SecureSumClient.prepare: clip, quantise, + Sk(mu_share) per segment  (from rng)
       -> SecureSumClient.seal: mask seed to the proxy, share to the server     (one upload)

``rng`` is the device's CSPRNG (:func:`dprec.random.secure_generator`): nothing outside
the device determines its noise share or its sampling. The parameters (q, gamma, the clip,
the dimension, each segment's ``mu_share = mu / min_honest``) are never taken from the
server's word: the device computes them from the published config it checked against its
policy (:class:`~dprec.client.policy.DevicePolicy`), so an inflated ``min_honest`` or
``n_clients`` is refused there, before a share is drawn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dprec.errors import DprecError
from dprec.mechanisms.skellam import SkellamMechanism
from dprec.protocol.secure_sum.client import NoiseShare, SecureSumClient
from dprec.protocol.secure_sum.params import SecureSumParams
from dprec.protocol.secure_sum.published import PUBLISHED_KEY
from dprec.protocol.secure_sum.sealed import KEY_BYTES

__all__ = ["PUBLISHED_KEY", "DeviceRound", "proxy_key_of", "segment_noise", "upload"]


@dataclass(frozen=True)
class DeviceRound:
    """One round as a device computes it from the checked config: its secure-sum
    parameters and its noise segments ``(dimension, mu_share)``, in the vector's order."""

    params: SecureSumParams
    segments: tuple[tuple[int, float], ...]

    def __post_init__(self) -> None:
        if sum(d for d, _ in self.segments) != self.params.dimension:
            raise DprecError(f"the noise segments cover {sum(d for d, _ in self.segments)} "
                             f"coordinates, the round has {self.params.dimension}")


def segment_noise(segments: Sequence[tuple[int, float]]) -> NoiseShare:
    """The client's share: ``Sk(mu_share)`` on each segment's coordinates, drawn from the
    generator :meth:`SecureSumClient.prepare` passes (the device's CSPRNG)."""

    def draw(dimension: int, rng: np.random.Generator) -> np.ndarray:
        parts = [SkellamMechanism(mu).noise(d, rng).astype(np.int64) for d, mu in segments]
        out = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        if out.size != dimension:
            raise DprecError(f"noise segments of {out.size} coordinates for a {dimension}-"
                             "coordinate round")
        return out

    return draw


def proxy_key_of(published: object) -> bytes:
    """The proxy's secure-sum key from what ``GET /v1/round`` publishes (``published``);
    :class:`DprecError` if it holds none of the right size (the seal checks the point)."""
    raw = published.get(PUBLISHED_KEY) if isinstance(published, Mapping) else None
    try:
        key = bytes.fromhex(raw) if isinstance(raw, str) else b""
    except ValueError:
        key = b""
    if len(key) != KEY_BYTES:
        raise DprecError(f"the proxy publishes no {KEY_BYTES}-byte secure-sum key "
                         f"({PUBLISHED_KEY}): nothing to seal the mask seed to")
    return key


def upload(round_: DeviceRound, proxy_key: bytes, server_key: bytes, x: Any,
           round_id: int, rng: np.random.Generator) -> bytes:
    """The device's sealed upload of vector ``x`` in round ``round_id``: checked keys
    (32 bytes, not low-order, distinct), clip, quantise, the noise share of every segment
    from ``rng``, then the split and the seal."""
    client = SecureSumClient(round_.params, proxy_key, server_key)
    return client.contribute(np.asarray(x, dtype=np.float64), round_id, rng,
                             segment_noise(round_.segments))
