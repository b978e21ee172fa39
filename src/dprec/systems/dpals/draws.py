"""Counter-based uniforms of dpals' clients: a draw is a pure function of
``(stream key, user, item, coordinate)``, so a device alone, a block of users and the whole
population (vectorised, in parallel, in any order) draw the same numbers.

A stream key is 64 bits from the generator of ``(seed, "dpals", purpose, release, round)``
(:func:`dprec.random.derive_generator`). The uniform of ``(user, item, j)`` is output ``j + 1``
of SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators",
OOPSLA 2014) started from the state ``mix(mix(key + (user + 1) G) + (item + 1) G)``, with
``G`` the golden-ratio increment and ``mix`` its finaliser; its top 53 bits give a double in
[0, 1). Only the draws' uniformity matters (they drive unbiased rounding; the privacy bound
holds for any rounding, :mod:`.accounting`), and it is checked in the tests.
"""

from __future__ import annotations

import numba
import numpy as np

from dprec.random import derive_generator

__all__ = ["pair_state", "stream_key", "uniform_at", "uniforms"]

_G = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
_ONE = np.uint64(1)
_UNIT = 1.0 / float(1 << 53)


def stream_key(seed: int, purpose: str, round_id: int, release: str = "") -> np.uint64:
    """The 64-bit key of the stream ``(seed, purpose, release, round_id)``."""
    rng = derive_generator(seed, "dpals", purpose, release, round_id)
    return np.uint64(rng.integers(0, 2 ** 64, dtype=np.uint64))


@numba.njit(inline="always")
def _mix(z: np.uint64) -> np.uint64:
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@numba.njit(inline="always")
def pair_state(key: np.uint64, user: np.int64, item: np.int64) -> np.uint64:
    """SplitMix64's starting state for ``(user, item)`` under ``key``."""
    s = _mix(key + (np.uint64(user) + _ONE) * _G)
    return _mix(s + (np.uint64(item) + _ONE) * _G)


@numba.njit(inline="always")
def uniform_at(state: np.uint64, j: np.int64) -> float:
    """Output ``j + 1`` of SplitMix64 from ``state``, as a double in [0, 1)."""
    return float(_mix(state + (np.uint64(j) + _ONE) * _G) >> _S11) * _UNIT


@numba.njit(cache=True)
def _uniforms(key: np.uint64, users: np.ndarray, items: np.ndarray, width: int) -> np.ndarray:
    out = np.empty((users.size, width))
    for p in range(users.size):
        s = pair_state(key, users[p], items[p])
        for j in range(width):
            out[p, j] = uniform_at(s, j)
    return out


def uniforms(key: np.uint64, users: np.ndarray, items: np.ndarray, width: int) -> np.ndarray:
    """``(len(users), width)``: row ``p`` holds the draws ``j = 0..width-1`` of the pair
    ``(users[p], items[p])`` (the reference the kernels use one at a time)."""
    return _uniforms(np.uint64(key), np.asarray(users, np.int64), np.asarray(items, np.int64),
                     int(width))
