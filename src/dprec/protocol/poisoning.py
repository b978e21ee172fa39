"""Poisoned clients: a fraction of the population sends worst-case VALID reports.

Local DP bounds what a report reveals about its sender, not what it says. A client that
skips its mechanism and writes any output the mechanism could have produced is, to the
proxy and the server, an honest client with unlucky noise: the services' checks
(:func:`~dprec.systems.deployable.check_upload`, a bit is a bit, an index is in range, a
value is in the mechanism's output range) accept it. This is the data-poisoning threat to
LDP protocols of Cao, Jia & Gong ("Data Poisoning Attacks to Local Differential Privacy
Protocols", USENIX Security 2021): fake users craft perturbed values directly. A robust
:class:`~dprec.protocol.aggregation.Aggregator` is the defence hook.

:class:`PoisonedClients` wraps a protocol's :class:`~dprec.protocol.engine.Clients`: every
client (attacker or not) runs the inner step as usual, so the honest clients draw exactly
the randomness of an unpoisoned run and send exactly the same reports; then the rows of the
attackers (a fraction of the users, chosen once with an explicit generator,
:func:`choose_attackers`) are overwritten with the attack's reports. ``sent()`` is the inner
population's, so the event log, each honest user's ledger and the privacy report are those
of the unpoisoned run. With no attacker the wrapper passes the messages through untouched
(a 0% run is bit-identical to an unwrapped one).

The attacker is given full knowledge of the round: the honest reports it is mixed with (what
the server will see) and the public broadcast. That is the worst case a defence has to
survive (the "full knowledge" setting of Fang et al., "Local Model Poisoning Attacks to
Byzantine-Robust Federated Learning", USENIX Security 2020). Two strategies per protocol:

DPLCF (:class:`~dprec.systems.dplcf.messages.ObfuscatedBits`, one N-bit vector per client)

- ``untargeted``: the all-ones vector. Under the unbiased estimator n_hat = A^-1 m every
  upload enters linearly, and an observed (1, 1) pair has the largest coefficient on
  n_hat11 (p^2 / (p - q)^2 for symmetric flips, about 2.5 at eps = 1, against about -0.9
  for (1, 0) and 0.3 for (0, 0)): all-ones adds the most spurious co-occurrence any valid
  vector can add, to every pair at once. It needs no knowledge and drives the estimated
  Jaccard of every low-count pair toward 1, so rare items become each other's neighbours.
- ``promote``: ones on ``targets`` random target items and on the ``fillers`` most popular
  items (ranked by the honest uploads' column counts: the bit-flip estimate of popularity is
  increasing in them), zeros elsewhere (Cao et al.'s maximal-gain attack, aimed at item-kNN).
  Every (target, filler) and (filler, filler) pair gets the (1, 1) coefficient per
  attacker, every (target or filler, other item) pair the negative (1, 0) one. The targets'
  neighbour lists fill with the popular items most users hold (so they are scored high for
  everyone: up to ``targets`` items pushed into every top-N list, the worst case for
  full-ranking HR@N when ``targets`` >= N), and the targets enter the popular items' own
  lists, displacing the true neighbours that users hold. A few fillers hurt most: with
  many, the popular items' estimated similarities to each other grow instead (on ML-100K
  at 10%: sampled HR@10 0.06 with 1-10 fillers, 0.08 with 20, none lost with 200).
- Adaptive shapes (issue 26: the attacker knows the defence). ``Poisoning.ones_range``
  = (low, high), the public validity range of ``dplcf-range``
  (:func:`~dprec.protocol.bit_screens.ones_range`): every attacker adds uniformly random
  other items up to ``low`` ones (``promote``: about 320 noise ones beside its 20 at
  eps = 1 on ML-100K) or clears random ones down to ``high`` (``untargeted``: all-ones
  thinned to ``high`` ones), each with its own draws. (Putting the ``high`` ones on the
  rarest items instead raised sampled HR@10 above the clean run on ML-100K: the rare
  negatives' neighbour lists fill with rare items no user holds.) ``Poisoning.screen`` = (z,
  threshold), ``dplcf-screen``'s itemset size and threshold: each attacker keeps each of its
  chosen items independently with probability rho = min(1, (threshold / (2 m))^(1/z)) (m
  attackers), so any z of them are held by about threshold / 2 attackers, under the screen.

FMF-LDP (:class:`~dprec.protocol.batches.ReportBatch`, k (item, factor, value) reports)

- ``untargeted`` (preference reversal): each attacker keeps its own k uniformly drawn
  (item, factor) slots, so its reports land where an honest client's would, and gives each
  the extreme output of the mechanism (bit 1/0 = +-C for the binary mechanism, +-scale for
  the piecewise one, +-1 without noise) with the sign -sign(l_i) sign(d_f). d_f is the
  sign of the honest reports' total over all items in factor f: the honest item gradient
  c (p - x.v) x is dominated by the items users hold, so d points along the users'
  vectors. l_i is item i's honest total projected on d: how strongly the users pull v_i
  toward themselves (its popularity as the server sees it). Liked items are pushed away
  from the users and the others toward them, which reverses the model's ranking. (Reversing
  each cell's own honest sign is weaker: at a per-report eps, the sign of the ~10 honest
  reports in one cell is mostly noise. On ML-100K at 10% it cost 0.05 HR@10, this 0.10.)
- ``promote``: all k reports on the (target item, factor) cells, spread evenly over them,
  each at the extreme with the sign of d_f, the honest reports' total over all items in
  factor f: the honest item gradient c (p - x.v) x is dominated by the positive items and
  so points along the users' vectors; pushing the targets' v_t along it raises x_u . v_t
  for most users.
- ``promote`` with assigned cells (``Poisoning.fixed_cells``, FMF-LDP ``cells=assigned``:
  the proxy ignores a message whose cells are not the sender's,
  :mod:`dprec.systems.fmf.cells`): each attacker keeps the k cells it was assigned and can
  only choose their values: the extreme with the sign of d_f on the cells of a target item,
  with the opposite sign on every other cell (pushing the other items away from the users
  raises the targets' rank too). Nearly all its damage comes from that second half, which
  needs no choice of cells: the target half alone (a target cell is about k T / N of an
  attacker's k cells) barely moves sampled HR@10 on ML-100K.
- ``false_inputs`` (binary mechanism): the same signs, but each bit drawn from the mechanism
  on the false input x' = sign, so the attacker is, report by report, an honest client with
  gradient +-1: the attack no aggregator can tell apart (issue 26 §3's measured floor,
  docs/results/poisoning_defences_fmf.md).

``promote`` needs ``targets`` items; :func:`choose_targets` draws them with the attack's
generator, after the attackers.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from dprec.errors import DprecError
from dprec.mechanisms.numeric import BinaryMechanism
from dprec.protocol.batches import ReportBatch
from dprec.protocol.engine import Clients, Sent

__all__ = [
    "STRATEGIES",
    "PackedBitUploads",
    "Poisoning",
    "PoisonHook",
    "PoisonedClients",
    "choose_attackers",
    "choose_targets",
    "poison",
]

Strategy = Literal["untargeted", "promote"]
STRATEGIES: tuple[str, ...] = ("untargeted", "promote")


@runtime_checkable
class PackedBitUploads(Protocol):
    """A batch of uploads of one N-bit vector per client, packed 8 per byte, as a frozen
    dataclass that validates itself: DPLCF's
    :class:`~dprec.systems.dplcf.messages.ObfuscatedBits` (the protocol layer knows it by
    shape, never by name)."""

    packed: np.ndarray
    """uint8 ``(clients, ceil(n_items / 8))``."""
    n_items: int

    @property
    def n_clients(self) -> int:
        """Rows of ``packed``."""


def choose_attackers(n_users: int, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """``round(fraction * n_users)`` distinct users, sorted (int64): the first ones of a
    uniform permutation drawn from ``rng``. The draw does not depend on ``fraction``, so
    with the same generator state a smaller fraction's attackers are among a larger one's
    (and the targets drawn next are the same)."""
    check_fraction(fraction)
    if isinstance(n_users, bool) or int(n_users) != n_users or n_users < 0:
        raise DprecError(f"n_users must be an integer >= 0, got {n_users}")
    order = rng.permutation(int(n_users))
    return np.sort(order[:int(round(fraction * n_users))]).astype(np.int64)


def _into_range(rows: np.ndarray, low: int, high: int, rng: np.random.Generator
                ) -> np.ndarray:
    """Each bool row with uniformly random zeros set until it has ``low`` ones, or random
    ones cleared until it has ``high`` (its own draws per row)."""
    ones = rows.sum(axis=1)
    keys = rng.random(rows.shape)
    add = np.where(rows, np.inf, keys)  # the zeros, in a random order
    rank_add = np.argsort(np.argsort(add, axis=1, kind="stable"), axis=1, kind="stable")
    rows = rows | (rank_add < np.maximum(low - ones, 0)[:, None])
    drop = np.where(rows, keys, np.inf)  # the ones, in a random order
    rank_drop = np.argsort(np.argsort(drop, axis=1, kind="stable"), axis=1, kind="stable")
    return rows & ~(rank_drop < np.maximum(rows.sum(axis=1) - high, 0)[:, None])


def choose_targets(n_items: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` distinct target items drawn uniformly from ``rng``, sorted (int64)."""
    if isinstance(count, bool) or int(count) != count or not 1 <= count <= n_items:
        raise DprecError(f"targets must be an integer in [1, n_items = {n_items}], got {count}")
    return np.sort(rng.choice(int(n_items), size=int(count), replace=False)).astype(np.int64)


def check_fraction(fraction: float) -> float:
    """The poisoned fraction must lie in [0, 1)."""
    if not 0.0 <= fraction < 1.0:
        raise DprecError(f"fraction must be in [0, 1), got {fraction}")
    return float(fraction)


@dataclass(frozen=True)
class Poisoning:
    """What the attackers do (see the module docstring for each strategy)."""

    fraction: float
    """Share of the users who are attackers, in [0, 1)."""
    strategy: Strategy = "untargeted"
    """``untargeted`` or ``promote``."""
    targets: int = 10
    """``promote``: how many target items (10: every slot of a top-10 list)."""
    fillers: int = 10
    """DPLCF ``promote``: the most popular items set beside the targets."""
    value_bound: float | None = None
    """Real-valued FMF reports: the largest |value| the mechanism outputs (None: one-bit
    reports, or DPLCF)."""
    fixed_cells: bool = False
    """FMF-LDP: the attackers must keep the (item, factor) cells of their own messages
    (``cells=assigned``); they choose only the values."""
    false_inputs: bool = False
    """FMF-LDP, binary mechanism: the attackers run the mechanism itself on the false input
    x' = the attack's sign (+-1) in each cell, bit +1 with probability (1 + x' / C) / 2
    (``value_bound`` = C, set by :func:`poison`): such a client is, report by report, an
    honest one whose clipped gradient is x', so no aggregator can tell it apart (the floor
    of issue 26's bound: a cell mean moves by up to 2 m / n, against (C + 1) m / n)."""
    ones_range: tuple[int, int] | None = None
    """DPLCF: (low, high), the ones an upload may have to pass ``dplcf-range`` (None: no
    shaping)."""
    screen: tuple[int, int] | None = None
    """DPLCF: (z, threshold) of ``dplcf-screen``, to keep every z-itemset of the attackers
    under it (None: no shaping)."""

    def __post_init__(self) -> None:
        check_fraction(self.fraction)
        if self.strategy not in STRATEGIES:
            raise DprecError(f"strategy must be one of {', '.join(STRATEGIES)}, got "
                             f"{self.strategy!r}")
        for name in ("targets", "fillers"):
            value = getattr(self, name)
            if isinstance(value, bool) or int(value) != value or value < 1:
                raise DprecError(f"{name} must be an integer >= 1, got {value}")
        if self.value_bound is not None and not (np.isfinite(self.value_bound)
                                                 and self.value_bound > 0):
            raise DprecError(f"value_bound must be a finite number > 0, got {self.value_bound}")
        if self.ones_range is not None and not 0 <= self.ones_range[0] <= self.ones_range[1]:
            raise DprecError(f"ones_range must be (low, high) with 0 <= low <= high, got "
                             f"{self.ones_range}")
        if self.screen is not None and not (self.screen[0] >= 2 and self.screen[1] >= 1):
            raise DprecError(f"screen must be (z >= 2, threshold >= 1), got {self.screen}")


class PoisonedClients(Clients):
    """``inner``'s clients, the users ``attackers`` sending ``poisoning``'s reports instead.

    ``rng`` draws the promoted targets (once, on first use); the simulation's generator is
    never touched. Users are the global ids of :class:`ReportBatch` rows, and for DPLCF
    uploads the row's position in the round (the order the clients step in).
    """

    def __init__(self, inner: Clients, attackers: np.ndarray, poisoning: Poisoning,
                 rng: np.random.Generator) -> None:
        self.inner = inner
        self.attackers = np.unique(np.asarray(attackers, np.int64))
        self.poisoning = poisoning
        self._rng = rng
        self.targets: np.ndarray | None = None
        self.replaced = 0
        """Client messages replaced so far (all rounds)."""

    def sent(self) -> list[Sent]:
        return self.inner.sent()

    def step(self, broadcast: Any, round: int, rng: np.random.Generator) -> Iterator[Any]:
        messages = self.inner.step(broadcast, round, rng)
        if not len(self.attackers):
            yield from messages
            return
        # full knowledge: the attackers see the whole round's honest reports first
        held = list(messages)
        masks = self._masks(held)
        yield from self._rewrite(held, masks, broadcast)

    def _masks(self, messages: list[Any]) -> list[np.ndarray]:
        out = []
        offset = 0
        for m in messages:
            if isinstance(m, ReportBatch):
                ids = np.asarray(m.client_ids, np.int64)
            elif isinstance(m, PackedBitUploads):
                ids = np.arange(offset, offset + m.n_clients)
                offset += m.n_clients
            else:
                raise DprecError(f"poisoning needs wire reports (DPLCF uploads or FMF-LDP "
                                 f"report batches), got {type(m).__name__}")
            out.append(np.isin(ids, self.attackers))
        return out

    def _targets(self, n_items: int) -> np.ndarray:
        if self.targets is None:
            self.targets = choose_targets(n_items, self.poisoning.targets, self._rng)
        return self.targets

    def _rewrite(self, messages: list[Any], masks: list[np.ndarray], broadcast: Any
                 ) -> list[Any]:
        if not messages:
            return messages
        if isinstance(messages[0], PackedBitUploads):
            rows = self._bit_rows(messages, masks)
            out: list[Any] = []
            start = 0
            for m, mask in zip(messages, masks, strict=True):
                if mask.any():
                    n_bad = int(mask.sum())
                    packed = m.packed.copy()
                    packed[mask] = rows[start:start + n_bad]
                    start += n_bad
                    m = replace(m, packed=packed)  # validated again
                    self.replaced += n_bad
                out.append(m)
            return out
        return self._rewrite_reports(messages, masks, broadcast)

    # -- DPLCF --------------------------------------------------------------------------

    def _bit_rows(self, messages: list[PackedBitUploads], masks: list[np.ndarray]
                  ) -> np.ndarray:
        """The packed vectors of the attackers, in the order of the messages' rows."""
        n_items = messages[0].n_items
        n_bad = int(sum(int(mask.sum()) for mask in masks))
        pz = self.poisoning
        dense = np.ones(n_items, bool)
        counts = np.zeros(n_items, np.int64)
        if pz.strategy == "promote":
            for m, mask in zip(messages, masks, strict=True):
                honest = m.packed[~mask]
                if len(honest):
                    counts += np.unpackbits(honest, axis=1, count=n_items).sum(
                        axis=0, dtype=np.int64)
        if pz.strategy == "promote":
            targets = self._targets(n_items)
            dense[:] = False
            dense[targets] = True
            ranked = np.argsort(-counts, kind="stable")
            popular = ranked[~np.isin(ranked, targets)][:pz.fillers]
            dense[popular] = True
        if pz.ones_range is None and pz.screen is None:
            return np.tile(np.packbits(dense), (n_bad, 1))
        rows = np.tile(dense, (n_bad, 1))
        if pz.screen is not None:
            z, threshold = pz.screen
            rho = min(1.0, (threshold / (2.0 * max(n_bad, 1))) ** (1.0 / z))
            rows &= self._rng.random(rows.shape) < rho
        if pz.ones_range is not None:
            rows = _into_range(rows, *pz.ones_range, self._rng)
        return np.packbits(rows, axis=1)

    # -- FMF-LDP ------------------------------------------------------------------------

    def _rewrite_reports(self, messages: list[ReportBatch], masks: list[np.ndarray],
                         broadcast: Any) -> list[ReportBatch]:
        V = np.asarray(broadcast, np.float64)
        if V.ndim != 2:
            raise DprecError("FMF-LDP poisoning needs the broadcast item matrix V")
        n_items, n_factors = V.shape
        bits = messages[0].bits is not None
        if not bits and self.poisoning.value_bound is None:
            raise DprecError("real-valued reports need Poisoning.value_bound (the largest "
                             "|value| the mechanism outputs)")
        extreme = 1.0 if bits else float(self.poisoning.value_bound)  # type: ignore[arg-type]
        # the honest reports' signed total per (item, factor) cell this round
        totals = np.zeros(n_items * n_factors)
        for m, mask in zip(messages, masks, strict=True):
            keep = ~mask
            cells = (m.items[keep].astype(np.int64) * n_factors + m.factors[keep]).ravel()
            signed = (2.0 * m.bits[keep] - 1.0 if bits else m.values[keep]).ravel()
            totals += np.bincount(cells, weights=signed, minlength=totals.size)
        out = []
        for m, mask in zip(messages, masks, strict=True):
            if not mask.any():
                out.append(m)
                continue
            items, factors = m.items.copy(), m.factors.copy()
            n_bad, k = int(mask.sum()), m.items.shape[1]
            if self.poisoning.strategy == "untargeted":
                grid = totals.reshape(n_items, n_factors)
                direction = np.sign(grid.sum(axis=0))
                direction[direction == 0] = 1.0
                liked = np.sign(grid @ direction)
                liked[liked == 0] = 1.0
                sign = -liked[items[mask]] * direction[factors[mask]]
            elif self.poisoning.fixed_cells:
                direction = np.sign(totals.reshape(n_items, n_factors).sum(axis=0))
                direction[direction == 0] = 1.0
                on_target = np.isin(items[mask], self._targets(n_items))
                sign = np.where(on_target, 1.0, -1.0) * direction[factors[mask]]
            else:
                targets = self._targets(n_items)
                slot = np.arange(n_bad * k).reshape(n_bad, k)
                t_items = targets[slot % len(targets)]
                t_factors = (slot // len(targets)) % n_factors
                items[mask] = t_items.astype(items.dtype)
                factors[mask] = t_factors.astype(factors.dtype)
                direction = np.sign(totals.reshape(n_items, n_factors).sum(axis=0))
                direction[direction == 0] = 1.0
                sign = direction[t_factors]
            self.replaced += n_bad
            if bits:
                new = m.bits.copy()
                if self.poisoning.false_inputs:
                    c = float(self.poisoning.value_bound)  # type: ignore[arg-type]
                    new[mask] = self._rng.random(sign.shape) < 0.5 * (1.0 + sign / c)
                else:
                    new[mask] = (sign > 0).astype(new.dtype)
                out.append(ReportBatch(m.client_ids, items, factors, bits=new))
            else:
                new = np.array(m.values, np.float64, copy=True)
                new[mask] = sign * extreme
                out.append(ReportBatch(m.client_ids, items, factors,
                                       values=new.astype(m.values.dtype, copy=False)))
        return out


class PoisonHook:
    """A system's ``clients_hook`` that poisons its population (see :func:`poison`)."""

    def __init__(self, poisoning: Poisoning, rng: np.random.Generator) -> None:
        self.poisoning = poisoning
        self.rng = rng
        self.clients: PoisonedClients | None = None
        """The population of the last run (its attackers, targets and replaced count)."""

    def __call__(self, clients: Clients, n_users: int) -> PoisonedClients:
        attackers = choose_attackers(n_users, self.poisoning.fraction, self.rng)
        self.clients = PoisonedClients(clients, attackers, self.poisoning, self.rng)
        return self.clients


def poison(model: Any, poisoning: Poisoning, rng: np.random.Generator) -> PoisonHook:
    """Make ``model`` (a DPLCF-family or FMF-LDP system) simulate its protocol with
    ``poisoning``: sets and returns its ``clients_hook``. At fit time the attackers are
    drawn from ``rng`` (from the population size), then the targets.

    For real-valued FMF-LDP reports the value bound comes from the system's own config
    (its ``value_bound()``, the services' check) unless ``poisoning`` has one.
    """
    if not hasattr(model, "clients_hook"):
        raise DprecError(f"{getattr(model, 'name', model)!r} does not simulate a wire protocol:"
                         " poisoning runs on the DPLCF family and fmf-ldp")
    if poisoning.value_bound is None and getattr(model.config, "mechanism", None) in (
            "piecewise", "none"):
        bound = model.value_bound()
        poisoning = replace(poisoning, value_bound=bound)
    if getattr(model.config, "cells", "chosen") == "assigned":
        poisoning = replace(poisoning, fixed_cells=True)
    if poisoning.false_inputs:
        if getattr(model.config, "mechanism", None) != "binary":
            raise DprecError("false_inputs runs the binary mechanism: use fmf-ldp with "
                             "mechanism=binary")
        poisoning = replace(poisoning, value_bound=BinaryMechanism(model.config.epsilon).scale)
    model.clients_hook = PoisonHook(poisoning, rng)
    return model.clients_hook
