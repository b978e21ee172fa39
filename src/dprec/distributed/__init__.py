"""Scale-out: the round engine's clients in shards, on this process or on Ray actors.

- :mod:`~dprec.distributed.layout`: fixed blocks of consecutive client ids, the shard of a
  block (a hash of its id), and each block's random stream (key, round, block).
- :mod:`~dprec.distributed.partials`: the server's sums as integer / fixed-point partial
  sums (DPLCF pair counts, FMF-LDP per-cell sums and report counts), reduced in a tree.
- :mod:`~dprec.distributed.shards`: one shard runs the clients of its blocks in sequence
  and folds their messages into a partial; the DPLCF and FMF-LDP adapters.
- :mod:`~dprec.distributed.backend`: :class:`LocalBackend` (every shard in this process)
  and the driver loop both backends share; :mod:`~dprec.distributed.ray_backend`:
  :class:`RayBackend` (shards on Ray actors; ``pip install 'dprec[ray]'``, imported lazily).

Both backends give bit-identical models and privacy logs for any number of shards (tests in
``tests/distributed``). Nothing here imports ray until a :class:`RayBackend` is opened.
"""

from dprec.distributed.backend import LocalBackend, ShardedBackend, make_backend
from dprec.distributed.layout import BLOCK_SIZE, BlockLayout

__all__ = ["BLOCK_SIZE", "BlockLayout", "LocalBackend", "ShardedBackend", "make_backend"]
