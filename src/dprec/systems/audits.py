"""What a system offers to be audited: the audit hook on its spec (issue 32 §3).

A system's :class:`~dprec.systems.spec.SystemSpec` may hold ``audit``, a :class:`SystemAudit`
whose ``subject`` turns an :class:`AuditRequest` into the subject to audit, in the
vocabulary below; the audit package (:mod:`dprec.audit.api`) runs any subject and knows no
system. The subjects, each an
audit the package implements once:

- :class:`LocalValue`: one randomised value of the local mechanism (event level: a DPLCF bit,
  one rating's report);
- :class:`BitVector`: a user's whole N-bit vector, all ones against all zeros (user level);
- :class:`ShuffledSlot`: one slot of n shuffled binary reports (event level, FMF-LDP's);
- :class:`CanaryRun`: one training run with canary clients (Steinke, Nasr & Jagielski,
  NeurIPS 2023), whose training the system gives as a :class:`CanaryTraining`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dprec.errors import DprecError

__all__ = ["DEFAULT_GUESSES", "AuditRequest", "AuditSubject", "BitVector", "CanaryRun",
           "CanaryTraining", "LocalValue", "Noise", "RunNoise", "ShuffledSlot", "SystemAudit",
           "setting_integer"]

DEFAULT_GUESSES = (20, 50, 100, 200, 500)
"""The numbers of guesses a canary run tries by default (Bonferroni over them)."""


def setting_integer(settings: Mapping[str, str], key: str, default: int) -> int:
    """``--param KEY=VALUE``'s value, an integer (``default`` when not given)."""
    raw = settings.get(key)
    if raw is None:
        return default
    try:
        return int(str(raw).strip())
    except ValueError:
        raise DprecError(f"--param {key} must be an integer, got {raw!r}") from None


@dataclass(frozen=True)
class AuditRequest:
    """``dprec audit NAME``: the level asked for (None: the system's default), the audit's
    own settings (``n_items``, ``n_users``, ``canaries``, ... as text) and the system's
    config, built from the other ``--param`` values (and ``--epsilon``) over ``defaults``."""

    name: str
    level: str | None
    epsilon: float | None
    settings: Mapping[str, str]
    make_config: Callable[[Mapping[str, str]], Any]

    def config(self, defaults: Mapping[str, str] | None = None) -> Any:
        """The system's config (``defaults`` under the given ``--param`` values)."""
        return self.make_config(defaults or {})

    def integer(self, key: str, default: int) -> int:
        """The audit setting ``key``, an integer (``default`` when not given)."""
        return setting_integer(self.settings, key, default)

    def only_at(self, level: str, why: str) -> None:
        """:class:`DprecError` unless the level asked for is ``level`` (or none)."""
        if self.level not in (None, level):
            raise DprecError(f"{self.name} {why} (--level {level})")


@dataclass(frozen=True)
class LocalValue:
    """One randomised value of ``mechanism`` (event level); a bit flip names its per-bit
    ``claimed`` epsilon and the ``label`` of the result."""

    mechanism: Any
    claimed: float | None = None
    label: str = ""


@dataclass(frozen=True)
class BitVector:
    """A user's whole ``n_items``-bit vector through the bit flip ``mechanism``, all ones
    against all zeros (user level)."""

    mechanism: Any
    n_items: int


@dataclass(frozen=True)
class ShuffledSlot:
    """One report slot of ``n_users`` shuffled one-bit reports of ``mechanism``, at ``delta``
    (event level)."""

    mechanism: Any
    n_users: int
    delta: float


class CanaryTraining(ABC):
    """A federated system's training run, as the one-run canary audit drives it: ``m`` canary
    slots join the population; the audit scores every released model along the canaries'
    directions. The audit draws from one generator, in this order: the slots, then
    :meth:`initial_model`, then the directions, then :meth:`run`."""

    label: str
    """The result's name (e.g. ``dp-privrec-canaries``)."""
    clients_per_round: int
    rounds: int
    delta: float

    @abstractmethod
    def train_users(self) -> tuple[int, np.ndarray]:
        """(rows of the training matrix, the users who may be selected)."""

    @abstractmethod
    def initial_model(self, rng: np.random.Generator) -> np.ndarray:
        """theta_0, the flat initial model (drawn from ``rng``)."""

    @abstractmethod
    def roles(self, population: np.ndarray, n_total: int, directions: Any,
              present: np.ndarray, theta0: np.ndarray) -> tuple[Any, Any]:
        """(the clients, the server) of a run from ``theta0`` over ``population`` (ids; the
        canary slots from the training rows up, ``n_total`` ids in all): slot k sends
        S * ``directions[:, k]`` when ``present[k]``, else 0; the clients count each slot's
        rounds in ``participated``."""

    @abstractmethod
    def run(self, server: Any, clients: Any, rng: np.random.Generator, log: Any,
            observe: Callable[[int, Any], None]) -> Any:
        """Run every round (``observe(round, broadcast)`` after each); the run's record."""

    @abstractmethod
    def signal(self, broadcast: Any, clip: float) -> tuple[np.ndarray, float]:
        """(the released flat model, the clip of the next round) of ``broadcast``; a canary's
        update of norm ``clip`` moves the model by ``step() * clip`` along its direction."""

    @abstractmethod
    def step(self) -> float:
        """The model change per unit of one client's update (server_lr / M)."""

    @abstractmethod
    def sigma(self) -> float:
        """The noise of one round's observation, in units of the canary's signal."""

    @abstractmethod
    def initial_clip(self) -> float:
        """The clip of the first round."""

    @abstractmethod
    def claimed(self, rounds_run: int, n_population: int) -> float:
        """The epsilon the system's paper claims for such a run."""

    @abstractmethod
    def describe(self) -> tuple[str, dict[str, Any]]:
        """(the run's settings in words, as parameters)."""


@dataclass(frozen=True)
class CanaryRun:
    """One run of ``training`` with ``canaries`` slots (user level), ``guesses`` the numbers
    of guesses tried, ``support`` the coordinates of a canary's direction."""

    training: CanaryTraining
    canaries: int
    guesses: tuple[int, ...]
    support: int
    dataset: str = ""


AuditSubject = LocalValue | BitVector | ShuffledSlot | CanaryRun

Noise = Callable[[int, np.random.Generator], np.ndarray]
"""``noise(m, rng)``: m independent draws of what the honest clients add to one user's
audited coordinates, summed."""
RunNoise = Callable[[Mapping[str, Any], int, int, int], tuple[Noise, int, dict[str, object]]]
"""``run_noise(parameters, n_items, n_clients, min_honest)`` of a finished secure-sum run:
(the noise as its clients draw it, the user's coordinates k, what was drawn, for the
record)."""


@dataclass(frozen=True)
class SystemAudit:
    """A system's audit hook (its spec's ``audit``): ``subject`` of a request (None: ``dprec
    audit NAME`` refuses); the audit ``settings`` it takes from ``--param`` (every other key
    is a config field); its level when none is asked for; ``target``: also listed by ``dprec
    audit --list`` under this name (a protocol audit of the system's default config), with
    ``summary``."""

    subject: Callable[[AuditRequest], AuditSubject] | None = None
    settings: tuple[str, ...] = ()
    default_level: str = "event"
    target: str | None = None
    summary: str = ""
    run_noise: RunNoise | None = None
    """A secure sum's noise rebuilt from a finished run's published description (``dprec
    audit skellam-run``, :mod:`dprec.audit.runs`); None: its runs are not audited so."""

