"""The trusted curator of ``aggregation=trusted``, written once for dp-pop, dpals and
dp-fedavg: part of the server role inside the round engine (:mod:`dprec.protocol.engine`).

The central model (Agarwal, Kairouz, Liu, NeurIPS 2021, the central Skellam mechanism): the
clients send their exact integer vectors (no noise share, nothing sealed), the in-process
proxy hands the server their exact sum (:class:`~dprec.protocol.secure_sum.wire.ExactSum`),
and the curator adds ONE draw ``Sk(mu)`` per release to it before the system's own
post-processing. The draws do not depend on who is present, so a user's neighbour under
add/remove-one-user adjacency carries the same noise (the accounting's relation for
``trusted``). The curator sees every user's vector: the report states that threat model.

Randomness: the curator draws from its own generator, made at :meth:`Curator.start` from
the run's generator (the server's start: after the system's own start draws, before the
clients' first round), or that generator itself when it is the deployed CSPRNG
(:func:`dprec.random.is_secure`); it never reads the clients' seeds, and nothing it holds
determines a client's draws.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from dprec.errors import DprecError
from dprec.mechanisms.skellam import SkellamMechanism
from dprec.random import is_secure

__all__ = ["Curator", "CuratorRelease"]


class CuratorRelease(Protocol):
    """One release inside a round's vector: ``dimension`` coordinates from ``offset``, noised
    by ``Sk(mu)`` (a system's release plan supplies them)."""

    @property
    def offset(self) -> int: ...

    @property
    def dimension(self) -> int: ...

    @property
    def mu(self) -> float: ...


class Curator:
    """Adds a round's central Skellam draws to its exact integer sum (module docstring).

    ``mu``: one release per round, the whole vector, ``Sk(mu)`` (dp-pop, dp-fedavg); or
    ``releases(round)``: the round's releases, which must tile its vector (dpals: per-item
    statistics and the global Gramian, or the item counts)."""

    def __init__(self, mu: float | None = None, *,
                 releases: Callable[[int], Sequence[CuratorRelease]] | None = None) -> None:
        if (mu is None) == (releases is None):
            raise DprecError("a curator needs either mu or releases, not both")
        self._one = None if mu is None else SkellamMechanism(mu)
        self._releases = releases
        self.rng: np.random.Generator | None = None
        """The curator's own generator (None before :meth:`start`)."""

    def start(self, rng: np.random.Generator) -> None:
        """The curator's generator: ``rng`` itself when it is the CSPRNG (a deployed server:
        never a seeded generator derived from it), else one seeded from it (a simulation)."""
        self.rng = rng if is_secure(rng) else np.random.default_rng(rng.integers(2 ** 63))

    def noisy(self, total: np.ndarray, round: int) -> np.ndarray:
        """``total`` (the round's exact int64 sum) plus the round's draws, in release order."""
        if self.rng is None:
            raise DprecError("start the curator (the server's start) before its first round")
        total = np.asarray(total, np.int64)
        if self._one is not None:
            return total + self._one.noise(total.shape, self.rng)
        assert self._releases is not None
        out = total.copy()
        at = 0
        for r in self._releases(round):
            if int(r.offset) != at:
                raise DprecError(f"round {round}'s releases must tile its vector: one starts "
                                 f"at {r.offset}, expected {at}")
            out[at:at + int(r.dimension)] += SkellamMechanism(r.mu).noise(int(r.dimension),
                                                                          self.rng)
            at += int(r.dimension)
        if at != out.size:
            raise DprecError(f"round {round}'s releases cover {at} of its {out.size} "
                             "coordinates")
        return out
