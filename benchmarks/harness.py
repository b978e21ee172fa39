"""Shared benchmark plumbing: run one side in its own process and read its peak memory."""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
from collections.abc import Callable


def peak_gib() -> float:
    """Peak resident memory of this process so far (ru_maxrss, KiB on Linux), in GiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def in_child(fn: Callable[[argparse.Namespace, mp.Queue], None],
             args: argparse.Namespace) -> dict:
    """Run ``fn(args, queue)`` in a fresh spawned process, so its peak memory is its own."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=fn, args=(args, q))
    p.start()
    out = q.get()
    p.join()
    return out
