"""One dp-pop client's noisy row, drawn the same way by a simulated client (in process or
over HTTP) and by a device: its share ``Sk(mu / min_honest)`` first, then (uniform
sampling) k of its items, both from the client's own generator.

With a validity check (``validity=prio3``) the draw is repeated until the share meets the
check's truncation (:func:`~dprec.protocol.secure_sum.vdaf.noise_bounds.meets_truncation`:
``|z_j| <= T``, ``|sum z| <= S``, ``||v + z||^2 <= B^2``), so the row always passes the
proof. A first draw breaks a bound with probability at most ``eta`` (``n eta <= 2^-40``
over the round), so the numbers are, but with that probability, those of an unchecked
draw; the accountant adds ``(1 + e^epsilon) n (eta + eta_2)`` to delta
(:meth:`~dprec.protocol.secure_sum.vdaf.contribution.ContributionCheck.delta_cost`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dprec.mechanisms.skellam import SkellamMechanism
from dprec.protocol.secure_sum.errors import SecureSumError
from dprec.protocol.secure_sum.vdaf.noise_bounds import TOO_MANY_DRAWS, meets_truncation

__all__ = ["MAX_DRAWS", "device_vector"]

MAX_DRAWS = 64
"""Draws before an honest client gives up (each fails w.p. at most eta)."""


def device_vector(items: np.ndarray, n_items: int, k: int, sampling: str,
                  share: SkellamMechanism | None, rng: np.random.Generator, check: Any = None
                  ) -> np.ndarray:
    """One client's noisy vector (int64, ``n_items``): its share ``Sk(mu_share)`` drawn from
    ``rng`` first (``share`` None: no share, a trusted curator adds the noise), plus the
    k-hot vector of ``items`` (its own; already the k most recent for recency sampling, else
    k of them drawn uniformly from ``rng``); with ``check`` (a
    :class:`~dprec.protocol.secure_sum.vdaf.contribution.ContributionCheck`), both drawn
    again until the share meets its truncation (module docstring)."""
    items = np.asarray(items, dtype=np.int64)
    if share is None and check is not None:
        raise SecureSumError("a validity check bounds a noise share: give the share too")
    for _ in range(1 if check is None else MAX_DRAWS):
        z = (np.zeros(n_items, np.int64) if share is None
             else share.noise(n_items, rng).astype(np.int64))
        chosen = items
        if sampling == "uniform" and items.size > k:
            chosen = rng.choice(items, int(k), replace=False)
        v = np.zeros(n_items, np.int64)
        v[chosen] = 1
        if check is None or meets_truncation(check.truncation, z, vector=v,
                                             l2_bound_sq=check.circuit.l2_bound_sq):
            return z + v
    raise SecureSumError(f"{MAX_DRAWS} {TOO_MANY_DRAWS}")
