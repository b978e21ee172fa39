"""Where a client's randomness comes from: one interface, two sources.

Every mechanism in dprec draws from an explicit ``numpy.random.Generator``. A
:class:`RandomSource` hands one out:

- :class:`SeededSource`: the simulation's seeded generator (reproducible; simulation only);
- :class:`SecureSource`: a fresh CSPRNG-backed generator per use (ChaCha20 keyed with 256
  bits from the operating system, :func:`dprec.random.secure_generator`): what a device uses.

The mechanism code is the same either way.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from dprec.random import SeedLike, random_generator, secure_generator

__all__ = ["RandomSource", "SecureSource", "SeededSource"]


class RandomSource(ABC):
    """Gives the generator a client step draws from."""

    secure: bool = False
    """Whether the draws are unpredictable to anyone (deployment) or seeded (simulation)."""

    @abstractmethod
    def generator(self) -> np.random.Generator:
        """The generator for the next client step."""


class SeededSource(RandomSource):
    """The simulation's stream: the same generator every time, so runs reproduce."""

    def __init__(self, seed: SeedLike) -> None:
        self._rng = random_generator(seed)

    def generator(self) -> np.random.Generator:
        return self._rng


class SecureSource(RandomSource):
    """A cryptographically secure generator, freshly keyed for every client step."""

    secure = True

    def generator(self) -> np.random.Generator:
        return secure_generator()
