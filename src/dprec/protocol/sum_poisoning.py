"""Malicious clients of a secure sum: each sends any vector it likes in ``Z_q^d``.

A secure-sum upload is an additive share mod ``q = 2^b`` (:mod:`dprec.protocol.secure_sum`):
the server sees only the sum, so it cannot check one client's contribution, and the proxy
sees only a mask seed. Nothing bounds what a client adds, except the ring: the server
publishes the sum lifted to its representative in ``(-q/2, q/2]``, so the attackers
together can move every coordinate of the published sum to ANY value in that range, and no
further. A "huge" value wraps: adding ``H`` is adding ``H mod q`` (a multiple of ``q`` adds
nothing; ``q/2`` sends a count ``c >= 0`` to ``c - q/2``, the bottom of the ranking). A range
check on each coordinate would need the individual value, which the sharing hides; refusing
out-of-range contributions needs a zero-knowledge validity proof checked by the two
non-colluding parties (Prio's SNIPs: Corrigan-Gibbs and Boneh, NSDI 2017), not built here.

Strategies (``targets`` items drawn with the attack's generator; the coalition is the
attackers of one round; full knowledge of the honest sum, as in
:mod:`dprec.protocol.poisoning`, where a strategy needs it):

- ``promote``: the coalition adds ``amplitude`` to each target (default the number of
  enrolled clients ``n``: a count no item reaches unless every user holds it). No knowledge
  needed; one attacker suffices.
- ``k-hot``: each attacker sends a vector a client could honestly send: 1 on each target,
  0 elsewhere (``targets <= k``). m attackers add m to each target: the bounded attack.
- ``huge``: each attacker adds ``huge`` (default ``10**9``) to each target, as a naive
  attacker would; it lands as ``huge mod q`` (for ``q = 4096``: ``+2560``, i.e. ``-1536``
  after the lift, so the targets drop to the bottom).
- ``reverse``: the worst within the field: the coalition adds ``-2 S`` (``S`` the honest
  clients' noisy sum), so the server publishes ``-S`` and the ranking is reversed.
- ``random``: the coalition adds a uniform vector of ``Z_q^d``: the published sum is
  uniform on the ring and the ranking a uniform random permutation (no knowledge needed).
- ``out-of-range``: each attacker sends ``q/2 - 1`` on every coordinate (issue 31's probe:
  beside honest one-hot uploads it publishes about ``q/2`` on every item).

With a validity check (dp-pop's ``validity=prio3``) the in-process proxy refuses every row
the Prio3 proof would refuse (:mod:`dprec.protocol.secure_sum.in_process`); of these
strategies only ``k-hot`` (and a ``promote`` or ``huge`` whose per-attacker shift fits the
bounds) passes it.

:class:`PoisonedSumClients` wraps a secure-sum protocol's simulated clients, whose messages
are the layer's :class:`~dprec.protocol.secure_sum.wire.ClientBlock` (dp-pop, dpals,
dp-fedavg).
Honest clients step exactly as in an unpoisoned run; the attackers' rows are overwritten.
A coalition vector is split over the attackers (``delta // m`` each, the remainder on the
first). The in-process proxy sums int64 rows without reducing them mod ``q``, so the first
attacker's row is moved by a multiple of ``q`` (the same element of ``Z_q^d``) to make the
in-process total equal the lifted sum the secure server publishes, bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from dprec.errors import DprecError
from dprec.protocol.engine import Clients
from dprec.protocol.poisoning import (
    ReplacingClients,
    check_fraction,
    choose_attackers,
    choose_targets,
)
from dprec.protocol.secure_sum.ring import centred
from dprec.protocol.secure_sum.wire import ClientBlock

__all__ = [
    "SUM_STRATEGIES",
    "PoisonedSumClients",
    "SumPoisonHook",
    "SumPoisoning",
    "coalition_vectors",
    "poison_sum",
]

SumStrategy = Literal["promote", "k-hot", "huge", "reverse", "random", "out-of-range"]
SUM_STRATEGIES: tuple[str, ...] = ("promote", "k-hot", "huge", "reverse", "random",
                                   "out-of-range")


@dataclass(frozen=True)
class SumPoisoning:
    """What the malicious clients of a secure sum do (module docstring)."""

    fraction: float
    """Share of the users who are attackers, in [0, 1) (rounded: 0.001 of 943 is 1)."""
    strategy: SumStrategy = "promote"
    targets: int = 10
    """Target items (promote, k-hot, huge)."""
    amplitude: int | None = None
    """promote: the coalition's shift on each target (None: the enrolled clients n)."""
    huge: int = 10**9
    """huge: what each attacker adds to each target (before the ring reduces it mod q)."""

    def __post_init__(self) -> None:
        check_fraction(self.fraction)
        if self.strategy not in SUM_STRATEGIES:
            raise DprecError(f"strategy must be one of {', '.join(SUM_STRATEGIES)}, got "
                             f"{self.strategy!r}")
        for name in ("targets", "huge") + (("amplitude",) if self.amplitude is not None
                                           else ()):
            value = getattr(self, name)
            if isinstance(value, bool) or int(value) != value or value < 1:
                raise DprecError(f"{name} must be an integer >= 1, got {value!r}")


def coalition_vectors(poisoning: SumPoisoning, attackers: int, honest_sum: np.ndarray,
                      targets: np.ndarray, bits: int, n_clients: int,
                      rng: np.random.Generator) -> np.ndarray:
    """(attackers x d) int64: what each attacker adds (an element of ``Z_q^d``, written as
    an integer vector), before the lift adjustment of :class:`PoisonedSumClients`."""
    if attackers < 1:
        raise DprecError(f"attackers must be >= 1, got {attackers}")
    d = honest_sum.size
    q = 1 << int(bits)
    rows = np.zeros((attackers, d), dtype=np.int64)
    s = poisoning.strategy
    if s in ("k-hot", "huge"):
        rows[:, targets] = 1 if s == "k-hot" else int(poisoning.huge) % q
        return rows
    if s == "out-of-range":
        rows[:] = q // 2 - 1
        return rows
    delta = np.zeros(d, dtype=np.int64)
    if s == "promote":
        delta[targets] = n_clients if poisoning.amplitude is None else poisoning.amplitude
    elif s == "reverse":
        delta = -2 * np.asarray(honest_sum, np.int64)
    else:  # random
        delta = rng.integers(0, q, size=d, dtype=np.int64)
    rows[:] = delta // attackers
    rows[0] += delta - attackers * (delta // attackers)
    return rows


class PoisonedSumClients(ReplacingClients):
    """:class:`ReplacingClients` sending ``poisoning``'s vectors (module docstring); ``rng``
    draws the targets (once) and the ``random`` vector."""

    def _replace(self, held: list[Any], broadcast: Any) -> list[Any]:
        return self._rewrite(held)

    def _rewrite(self, blocks: list[Any]) -> list[Any]:
        if not blocks:
            return blocks
        for b in blocks:
            if not isinstance(b, ClientBlock) or b.params is None:
                raise DprecError(f"secure-sum poisoning needs a secure sum's client blocks, "
                                 f"got {type(b).__name__}")
        masks = [np.isin(np.asarray(b.ids, np.int64), self.attackers) for b in blocks]
        n_bad = int(sum(m.sum() for m in masks))
        if not n_bad:
            return blocks
        params = blocks[0].params
        own = [_rows_of(b, m) for b, m in zip(blocks, masks, strict=True)]
        d = own[0].shape[1]
        honest = sum((_honest_sum(b, m, r) for b, m, r in zip(blocks, masks, own, strict=True)),
                     start=np.zeros(d, np.int64))
        if len(self.attackers) and self.poisoning.strategy in ("promote", "k-hot", "huge") \
                and (self.targets is None or self.targets.max(initial=0) >= d):
            self.targets = choose_targets(d, self.poisoning.targets, self.rng)
        targets = self.targets if self.targets is not None else np.zeros(0, np.int64)
        rows = coalition_vectors(self.poisoning, n_bad, honest, targets, int(params.bits),
                                 int(params.expected_clients), self.rng)
        # the in-process proxy sums integers: move the first row by a multiple of q so the
        # total is the secure server's lifted sum (the same element of Z_q^d)
        total = honest + rows.sum(axis=0)
        rows[0] += centred(total, int(params.bits)) - total
        out, used = [], 0
        for b, m, old in zip(blocks, masks, own, strict=True):
            if m.any():
                take = int(m.sum())
                b = _replaced(b, m, old, rows[used:used + take])
                used += take
                self.replaced += take
            out.append(b)
        return out


def _rows_of(block: ClientBlock, mask: np.ndarray) -> np.ndarray:
    """The rows ``mask`` of ``block`` (int64, in order)."""
    if block.total is None:
        raise DprecError("secure-sum poisoning needs the block's total (not device clients)")
    if not mask.any():
        return np.zeros((0, np.asarray(block.total).size), np.int64)
    if callable(getattr(block.vectors, "rows", None)):  # only the rows asked for are built
        return np.concatenate([block.vectors.rows(i, i + 1) for i in np.flatnonzero(mask)])
    picked = [np.asarray(v, np.int64) for v, bad in zip(block.vectors(), mask, strict=True)
              if bad]
    return np.stack(picked)


def _honest_sum(block: ClientBlock, mask: np.ndarray, attackers: np.ndarray) -> np.ndarray:
    """The block's rows outside ``mask``, summed."""
    if block.total is None:
        raise DprecError("secure-sum poisoning needs the block's total (not device clients)")
    return np.asarray(block.total, np.int64) - attackers.sum(axis=0)


def _replaced(block: ClientBlock, mask: np.ndarray, old: np.ndarray, new: np.ndarray
              ) -> ClientBlock:
    """``block`` with its rows ``mask`` (``old``) replaced by ``new``."""
    inner = block.vectors

    def vectors() -> Any:
        it = iter(new)
        for v, bad in zip(inner(), mask, strict=True):
            yield next(it) if bad else v

    total = np.asarray(block.total, np.int64) - old.sum(axis=0) + new.sum(axis=0)
    return replace(block, total=total, vectors=vectors)


class SumPoisonHook:
    """A secure-sum system's ``clients_hook`` that poisons its population
    (:func:`poison_sum`)."""

    def __init__(self, poisoning: SumPoisoning, rng: np.random.Generator) -> None:
        self.poisoning = poisoning
        self.rng = rng
        self.clients: PoisonedSumClients | None = None
        """The population of the last run (attackers, targets, replaced count)."""

    def __call__(self, clients: Clients, n_users: int) -> PoisonedSumClients:
        attackers = choose_attackers(n_users, self.poisoning.fraction, self.rng)
        self.clients = PoisonedSumClients(clients, attackers, self.poisoning, self.rng)
        return self.clients


def poison_sum(model: Any, poisoning: SumPoisoning, rng: np.random.Generator) -> SumPoisonHook:
    """Make ``model`` (dp-pop with ``aggregation=secure``) simulate its secure sum with
    ``poisoning``: sets and returns its ``clients_hook``. At fit time the attackers are drawn
    from ``rng`` (from the population size), then the targets."""
    if not hasattr(model, "clients_hook"):
        raise DprecError(f"{getattr(model, 'name', model)!r} does not simulate a secure sum "
                         "with a clients hook: secure-sum poisoning runs on dp-pop and dpals")
    if getattr(model.config, "aggregation", "secure") != "secure":
        raise DprecError("secure-sum poisoning needs aggregation=secure (a trusted curator "
                         "sees and can check every contribution)")
    model.clients_hook = SumPoisonHook(poisoning, rng)
    return model.clients_hook
