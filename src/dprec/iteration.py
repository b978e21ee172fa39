"""The iteration loop of every iterative fit, written once, and its one hook.

An iteration is an epoch of a model's training or a round of a protocol. Every iterative
fit takes ``on_iteration``, an :class:`IterationHook` called once after each iteration
``t`` (0-based) as ``on_iteration(t, state)``:

- a model's epoch loop (:func:`iterations`, which also draws the optional progress bar):
  ``state`` is the model, which predicts inside the hook (learning curves);
- a system's fit passes its hook on to the loop it runs (its model's epochs or its
  protocol's rounds); a fit whose loop is its own (PrivRec's central training, the
  one-shot DP popularity) passes the system;
- a protocol round (:func:`~dprec.protocol.engine.run_protocol`): ``state`` is the
  broadcast the round produced (rounds that reached no server are not iterations of the
  model and call no hook).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from rich.progress import track

__all__ = ["IterationHook", "iterations"]


class IterationHook(Protocol):
    """Called once after each iteration: ``hook(iteration, state)``."""

    def __call__(self, iteration: int, state: Any, /) -> None:
        """After iteration ``iteration`` (0-based) left ``state``."""


def iterations(n: int, on_iteration: IterationHook | None = None, state: Any = None,
               progress: str | None = None) -> Iterator[int]:
    """The epoch loop: ``0, 1, ..., n-1``, and after the body of iteration ``t`` has run,
    ``on_iteration(t, state)``. A body that leaves the loop (``break``, ``return``, an
    exception) calls no hook for that iteration. ``progress``: the description of a
    progress bar (None: no bar)."""
    steps = range(n) if progress is None else track(range(n), description=progress)
    for t in steps:
        yield t
        if on_iteration is not None:
            on_iteration(t, state)
