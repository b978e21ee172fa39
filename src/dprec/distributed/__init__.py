"""Scale-out: the round engine's clients in shards, on this process or on Ray actors.

- :mod:`~dprec.distributed.layout`: fixed blocks of consecutive client ids, the shard of a
  block (a hash of its id), and each block's random stream (key, round, block).
- :mod:`~dprec.distributed.partials`: the server's sums as integer / fixed-point partial
  sums, reduced in a tree.
- :mod:`~dprec.distributed.shards`: one shard runs the clients of its blocks in sequence
  and folds their messages into a partial with its system's adapter
  (:class:`~dprec.protocol.sharding.SystemAdapter`, in ``systems/<name>/shard.py``).
- :mod:`~dprec.distributed.backend`: the executor of the engine's rounds over shards
  (:class:`ShardedBackend`; the loop is :func:`~dprec.protocol.engine.run_rounds`) and
  :class:`LocalBackend` (every shard in this process); :mod:`~dprec.distributed.ray_backend`:
  :class:`RayBackend` (shards on Ray actors; ``pip install 'dprec[ray]'``, imported lazily).

Both backends give bit-identical models and privacy logs for any number of shards (tests in
``tests/distributed``). Nothing here imports ray until a :class:`RayBackend` is opened.
"""

from dprec.distributed.backend import LocalBackend, ShardedBackend
from dprec.distributed.layout import BLOCK_SIZE, BlockLayout
from dprec.errors import DprecError

__all__ = ["BACKENDS", "BLOCK_SIZE", "BlockLayout", "LocalBackend", "ShardedBackend",
           "make_backend"]

BACKENDS = {"local": "every shard in this process",
            "ray": "shards on Ray actors (pip install 'dprec[ray]')"}
"""The sharded backends :func:`make_backend` opens, by ``--backend`` name."""


def make_backend(name: str, address: str | None = None, shards: int | None = None,
                 keep_warm: bool = False) -> ShardedBackend:
    """``local`` or ``ray`` (``address``: a running cluster, e.g. "auto"; None starts a
    local Ray with this machine's CPUs; ``keep_warm``: Ray actors serve every run until
    ``close()``)."""
    if name == "local":
        if address is not None:
            raise DprecError("--ray-address needs --backend ray")
        return LocalBackend(shards)
    if name == "ray":
        from dprec.distributed.ray_backend import RayBackend
        return RayBackend(address=address, shards=shards, keep_warm=keep_warm)
    raise DprecError(f"backend must be {' or '.join(BACKENDS)}, got {name!r}")
