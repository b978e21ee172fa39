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
from dprec.protocol.secure_sum.vdaf.contribution import ContributionCheck
from dprec.protocol.secure_sum.vdaf.noise_bounds import truncated_noise_share

__all__ = ["PUBLISHED_KEY", "DeviceRound", "device_share", "proxy_key_of", "segment_noise",
           "truncated_share", "upload"]


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


def truncated_share(check: ContributionCheck, v: np.ndarray, rng: np.random.Generator,
                    segments: Sequence[tuple[int, float]] | None = None) -> np.ndarray:
    """An honest client's noise share for the vector ``v``, redrawn from ``rng`` until
    ``v + z`` meets ``check``'s truncation (``|z_j| <= T``, ``|sum z| <= S``) and L2 bound
    (:func:`~dprec.protocol.secure_sum.vdaf.noise_bounds.truncated_noise_share`): each
    segment ``(dimension, mu_share)`` its own ``Sk(mu_share)`` (default: one segment at
    the truncation's ``mu_share``, the same draws)."""
    return truncated_noise_share(check.truncation, rng, vector=v,
                                 l2_bound_sq=check.circuit.l2_bound_sq,
                                 draw=None if segments is None else segment_noise(segments))


def device_share(v: np.ndarray, rng: np.random.Generator,
                 segments: Sequence[tuple[int, float]],
                 check: ContributionCheck | None = None) -> np.ndarray:
    """A client's noise share (int64) for its integer vector ``v``, drawn from ``rng`` as
    every device draws it: the one draw path of dpals' and dp-fedavg's clients, a device's
    :meth:`~dprec.protocol.secure_sum.deploy.SecureSumDeployment.client_step` and the
    simulated clients over the services alike. With ``check`` (``validity =
    prio3``): :func:`truncated_share`, redrawn until ``v + z`` meets the check's truncation
    and L2 bound, so an honest upload always proves; else each segment ``(dimension,
    mu_share)``'s ``Sk(mu_share)`` (:func:`segment_noise`, the draws of
    :meth:`~dprec.protocol.secure_sum.client.SecureSumClient.prepare`)."""
    v = np.asarray(v, dtype=np.int64)
    if check is not None:
        return truncated_share(check, v, rng, segments)
    return segment_noise(segments)(v.size, rng)
