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
Byzantine-Robust Federated Learning", USENIX Security 2020).

The strategies (``untargeted``, ``promote``) are each protocol's own: an :class:`Attack` in
its system's folder (``systems/<name>/attacks.py``), named by the system (its
``poisoning_attack``).

``promote`` needs ``targets`` items; :func:`choose_targets` draws them with the attack's
generator, after the attackers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from dprec.errors import DprecError
from dprec.protocol.engine import Clients, Sent

__all__ = [
    "STRATEGIES",
    "Attack",
    "Poisoning",
    "PoisonHook",
    "PoisonedClients",
    "ReplacingClients",
    "choose_attackers",
    "choose_targets",
    "poison",
]

Strategy = Literal["untargeted", "promote"]
STRATEGIES: tuple[str, ...] = ("untargeted", "promote")


class Attack(ABC):
    """A protocol's attack (its system's ``poisoning_attack``, in the system's
    ``attacks.py``): who sent each row of its wire messages, and the attackers' rows
    rewritten."""

    @abstractmethod
    def senders(self, message: Any, offset: int) -> tuple[np.ndarray, int]:
        """(the user of each row of ``message``, the offset of the next message's rows)."""

    @abstractmethod
    def rewrite(self, clients: PoisonedClients, messages: list[Any], masks: list[np.ndarray],
                broadcast: Any) -> list[Any]:
        """The round's ``messages`` with the rows of ``masks`` (the attackers') rewritten to
        ``clients.poisoning``'s attack, with full knowledge of the honest rows and
        ``broadcast``; counts them in ``clients.replaced`` and draws only from
        ``clients.rng`` (the targets through :meth:`PoisonedClients.targets_for`)."""


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


class ReplacingClients(Clients, ABC):
    """``inner``'s clients, the users ``attackers`` replacing their messages with
    ``poisoning``'s after seeing the whole round's honest ones (full knowledge).

    ``rng`` is the attack's own generator (targets, the attack's draws); the simulation's
    generator is never touched. ``sent()`` is the inner population's.
    """

    def __init__(self, inner: Clients, attackers: np.ndarray, poisoning: Any,
                 rng: np.random.Generator) -> None:
        self.inner = inner
        self.attackers = np.unique(np.asarray(attackers, np.int64))
        self.poisoning = poisoning
        self.rng = rng
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
        yield from self._replace(list(messages), broadcast)

    @abstractmethod
    def _replace(self, held: list[Any], broadcast: Any) -> list[Any]:
        """The round's messages with the attackers' replaced (``held`` is all of them)."""


class PoisonedClients(ReplacingClients):
    """:class:`ReplacingClients` sending ``poisoning``'s reports; ``rng`` draws the promoted
    targets (once, on first use) and the attack's own draws. Which user sent a row is the
    ``attack``'s (:meth:`Attack.senders`).
    """

    def __init__(self, inner: Clients, attackers: np.ndarray, poisoning: Poisoning,
                 rng: np.random.Generator, attack: Attack) -> None:
        super().__init__(inner, attackers, poisoning, rng)
        self.attack = attack

    def _replace(self, held: list[Any], broadcast: Any) -> list[Any]:
        return self._rewrite(held, self._masks(held), broadcast)

    def _masks(self, messages: list[Any]) -> list[np.ndarray]:
        out = []
        offset = 0
        for m in messages:
            ids, offset = self.attack.senders(m, offset)
            out.append(np.isin(ids, self.attackers))
        return out

    def targets_for(self, n_items: int) -> np.ndarray:
        """The promoted targets, drawn from :attr:`rng` on first use."""
        if self.targets is None:
            self.targets = choose_targets(n_items, self.poisoning.targets, self.rng)
        return self.targets

    def _rewrite(self, messages: list[Any], masks: list[np.ndarray], broadcast: Any
                 ) -> list[Any]:
        if not messages:
            return messages
        return self.attack.rewrite(self, messages, masks, broadcast)

class PoisonHook:
    """A system's ``clients_hook`` that poisons its population (see :func:`poison`)."""

    def __init__(self, poisoning: Poisoning, rng: np.random.Generator, attack: Attack) -> None:
        self.poisoning = poisoning
        self.rng = rng
        self.attack = attack
        self.clients: PoisonedClients | None = None
        """The population of the last run (its attackers, targets and replaced count)."""

    def __call__(self, clients: Clients, n_users: int) -> PoisonedClients:
        attackers = choose_attackers(n_users, self.poisoning.fraction, self.rng)
        self.clients = PoisonedClients(clients, attackers, self.poisoning, self.rng,
                                       self.attack)
        return self.clients


def poison(model: Any, poisoning: Poisoning, rng: np.random.Generator) -> PoisonHook:
    """Make ``model`` (a system whose protocol has an attack: its ``poisoning_attack``, e.g.
    the DPLCF family and fmf-ldp) simulate its protocol with ``poisoning``: sets and returns
    its ``clients_hook``. At fit time the attackers are drawn from ``rng`` (from the
    population size), then the targets. The system completes ``poisoning`` from its own
    config (e.g. FMF-LDP's value bound, :attr:`Poisoning.fixed_cells`) and refuses what its
    protocol cannot be attacked with."""
    attack_for = getattr(model, "poisoning_attack", None)
    if attack_for is None or not hasattr(model, "clients_hook"):
        raise DprecError(f"{getattr(model, 'name', model)!r} does not simulate a wire protocol:"
                         " poisoning runs on the DPLCF family and fmf-ldp")
    attack, poisoning = attack_for(poisoning)
    model.clients_hook = PoisonHook(poisoning, rng, attack)
    return model.clients_hook
