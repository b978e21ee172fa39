"""The one place where seeds become generators.

Every random step in dprec takes an explicit :class:`numpy.random.Generator`; seeds are
turned into generators here, and independent streams are derived from (seed, purpose)
so that, e.g., the evaluation negatives do not depend on which system ran first.
"""

from __future__ import annotations

import zlib

import numpy as np

SeedLike = int | np.random.Generator | np.random.SeedSequence | None


def random_generator(seed: SeedLike = None) -> np.random.Generator:
    """Return a Generator for ``seed`` (a Generator is returned unchanged)."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


def derive_generator(seed: int, *purpose: str | int) -> np.random.Generator:
    """An independent stream for ``(seed, *purpose)``; stable across runs and processes."""
    words = [int(seed)]
    for p in purpose:
        words.append(zlib.crc32(p.encode()) if isinstance(p, str) else int(p))
    return np.random.default_rng(np.random.SeedSequence(words))
