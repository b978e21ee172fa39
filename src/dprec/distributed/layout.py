"""Client blocks, their shards and their random streams.

The issue's rule "a client goes to a shard by a hash of its id, and its randomness comes
from (seed, round, client id)" is applied to fixed BLOCKS of ``block_size`` consecutive
client ids (4,096 by default): client ``u`` is in block ``b = u // block_size``; the block
goes to shard ``hash(b) mod n_shards`` (:func:`block_hash`, SplitMix64's finaliser), so a
client's shard is a hash of its id (through ``u // block_size``); and every random draw of
the block's clients in round ``r`` comes from ``derive_generator(key_r, "client-block", r,
b)`` (:func:`~dprec.protocol.sharding.block_generator`), vectorised over the block's
clients. ``key_r`` is drawn by
the driver from the run's seeded generator, once per round, so the streams are a function
of (seed, round, block) and of nothing else: not of the number of shards, not of which
shard or process runs the block, not of the order the blocks run in. One generator per
block rather than per client keeps the client step vectorised (one ``derive_generator`` call
per 4,096 clients instead of one per client, about 10 microseconds each).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dprec.errors import DprecError

__all__ = ["BLOCK_SIZE", "BlockLayout", "block_hash"]

BLOCK_SIZE = 4096
"""Clients per block (DPLCF's default batch): the unit of sharding and of randomness."""


def block_hash(blocks: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser of the block ids (uint64): a fixed, well-mixed hash."""
    z = np.asarray(blocks, np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@dataclass(frozen=True)
class BlockLayout:
    """``n_users`` client ids cut into blocks of ``block_size`` consecutive ids."""

    n_users: int
    block_size: int = BLOCK_SIZE

    def __post_init__(self) -> None:
        for name in ("n_users", "block_size"):
            v = getattr(self, name)
            if isinstance(v, bool) or int(v) != v or v < (0 if name == "n_users" else 1):
                raise DprecError(f"{name} must be an integer >= "
                                 f"{0 if name == 'n_users' else 1}, got {v}")

    @property
    def n_blocks(self) -> int:
        return -(-self.n_users // self.block_size)

    def rows(self, block: int) -> tuple[int, int]:
        """The client ids start:stop of ``block``."""
        start = int(block) * self.block_size
        return start, min(self.n_users, start + self.block_size)

    def shard_blocks(self, n_shards: int) -> list[np.ndarray]:
        """The blocks of each of ``n_shards`` shards (ascending ids; a shard may be empty)."""
        if isinstance(n_shards, bool) or int(n_shards) != n_shards or n_shards < 1:
            raise DprecError(f"shards must be an integer >= 1, got {n_shards}")
        blocks = np.arange(self.n_blocks, dtype=np.int64)
        owner = block_hash(blocks) % np.uint64(n_shards)
        return [blocks[owner == s] for s in range(int(n_shards))]

    def users(self, blocks: np.ndarray) -> np.ndarray:
        """The client ids of ``blocks``, block after block (int64)."""
        parts = [np.arange(*self.rows(b), dtype=np.int64) for b in blocks]
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)

    def spans(self, blocks: np.ndarray) -> list[tuple[int, int, int]]:
        """(block, start, stop) of each block's rows within :meth:`users` of ``blocks``."""
        out, at = [], 0
        for b in blocks:
            lo, hi = self.rows(b)
            out.append((int(b), at, at + hi - lo))
            at += hi - lo
        return out
