"""The one place where seeds become generators.

Every random step in dprec takes an explicit :class:`numpy.random.Generator`; seeds are
turned into generators here, and independent streams are derived from (seed, purpose)
so that, e.g., the evaluation negatives do not depend on which system ran first.
"""

from __future__ import annotations

import zlib

import numpy as np

__all__ = ["SeedLike", "derive_generator", "is_secure", "random_generator", "secure_generator"]

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


def secure_generator() -> np.random.Generator:
    """A Generator whose bits come from a cryptographically secure generator: for deployed
    clients and proxies, never for simulations (which need their seeds).

    Construction: ChaCha20 (20 rounds, ``randomgen.ChaCha``) keyed with 256 bits from the
    operating system's CSPRNG (``secrets.token_bytes``), the construction of OpenBSD's
    arc4random and Linux's getrandom. Every mechanism and shuffle in dprec takes a
    ``numpy.random.Generator``, so the same code runs on either source. Take a fresh one per
    use (each report, each shuffle): its key is then used once and dropped.
    """
    import secrets

    try:
        from randomgen import ChaCha
    except ImportError as e:  # pragma: no cover - depends on the install
        raise ImportError("a secure generator needs randomgen: pip install 'dprec[client]'"
                          ) from e
    key = np.frombuffer(secrets.token_bytes(32), dtype=np.uint64).copy()
    return np.random.Generator(ChaCha(key=key, counter=0, rounds=20))


def is_secure(rng: np.random.Generator) -> bool:
    """Whether ``rng`` draws from the CSPRNG of :func:`secure_generator` (ChaCha20): a
    deployed role keeps drawing from one, never from a seeded generator derived from it."""
    return type(rng.bit_generator).__name__ == "ChaCha" and \
        type(rng.bit_generator).__module__.startswith("randomgen")
