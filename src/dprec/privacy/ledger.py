"""Per-user privacy ledger: spent epsilon under basic composition, vectorised over users.

A client keeps its own ledger entry and refuses to send once a report would push its
spent epsilon past the user's budget (docs/architecture.md, privacy). The simulation keeps
all users' entries in one array.

The ledger reads the same events as the accountant: :meth:`PrivacyLedger.spend_event`
charges ``count`` copies of a DpEvent at its pure epsilon, and
:meth:`PrivacyLedger.from_log` rebuilds the spent epsilon of every user from an
:class:`~dprec.privacy.events.EventLog`, equal to the accountant's basic-composition user
level (:class:`~dprec.privacy.basic_accountant.BasicAccountant`) user by user.
"""

from __future__ import annotations

import math

import dp_accounting
import numpy as np

from dprec.errors import DprecError, check_positive
from dprec.privacy.accountant import Direction
from dprec.privacy.basic_accountant import BasicAccountant
from dprec.privacy.events import EventLog

__all__ = ["BudgetExceededError", "PrivacyLedger"]

_REL_TOL = 1e-9  # floating slack so that e.g. 10 x 0.1 fits a budget of 1.0


class BudgetExceededError(DprecError):
    """A spend would take at least one user past the privacy budget."""


class PrivacyLedger:
    """Spent epsilon per user (basic composition: spends add up).

    ``budget_eps``: the per-user budget (``inf`` allowed, meaning "track only").
    ``n_users``: initial number of users; the ledger grows when a larger user index is
    seen. ``spent[u]`` is user ``u``'s spent epsilon.
    """

    def __init__(self, budget_eps: float, n_users: int = 0) -> None:
        check_positive("budget_eps", budget_eps)
        if int(n_users) != n_users or n_users < 0:
            raise DprecError(f"n_users must be an integer >= 0, got {n_users}")
        self.budget_eps = float(budget_eps)
        self.spent = np.zeros(int(n_users), dtype=np.float64)

    def __len__(self) -> int:
        return self.spent.size

    def _prepare(
        self, users: np.ndarray | int, eps: np.ndarray | float
    ) -> tuple[np.ndarray, np.ndarray]:
        u = np.atleast_1d(np.asarray(users))
        if u.size and not np.issubdtype(u.dtype, np.integer):
            raise DprecError(f"users must be integer indices, got dtype {u.dtype}")
        u = u.astype(np.int64, copy=False).ravel()
        if u.size and u.min() < 0:
            raise DprecError(f"users must be >= 0, got {int(u.min())}")
        e = np.broadcast_to(np.asarray(eps, dtype=np.float64), u.shape)
        if e.size and not np.all(e >= 0):
            raise DprecError(f"eps must be >= 0, got {float(e.min())}")
        if u.size and u.max() >= self.spent.size:
            grown = np.zeros(int(u.max()) + 1, dtype=np.float64)
            grown[: self.spent.size] = self.spent
            self.spent = grown
        return u, e

    def _limit(self) -> float:
        return self.budget_eps * (1.0 + _REL_TOL)

    def remaining(self, users: np.ndarray | int | None = None) -> np.ndarray:
        """Budget left per user (all users when ``users`` is None)."""
        if users is None:
            return self.budget_eps - self.spent
        u, _ = self._prepare(users, 0.0)
        return self.budget_eps - self.spent[u]

    def can_spend(self, users: np.ndarray | int, eps: np.ndarray | float) -> np.ndarray:
        """Boolean mask: may each listed user spend ``eps`` more (checked entry by entry)?

        Each entry is checked against the current ledger alone; repeated users in one call
        are not summed (use :meth:`spend`, which sums them, to commit).
        """
        u, e = self._prepare(users, eps)
        return self.spent[u] + e <= self._limit()

    def spend(self, users: np.ndarray | int, eps: np.ndarray | float) -> None:
        """Add ``eps`` to each listed user's spent epsilon, all or nothing.

        Repeated users are summed. Raises :class:`BudgetExceededError` (and changes nothing)
        if any user would pass the budget.
        """
        u, e = self._prepare(users, eps)
        if not u.size:
            return
        total = np.bincount(u, weights=e, minlength=self.spent.size)
        listed = np.zeros(self.spent.size, dtype=bool)
        listed[u] = True  # users already past the budget (from_log) only block their own spends
        over = np.flatnonzero(listed & (self.spent + total > self._limit()))
        if over.size:
            first = int(over[0])
            raise BudgetExceededError(
                f"spent epsilon must stay <= budget {self.budget_eps:g}: user {first} would "
                f"reach {self.spent[first] + total[first]:.6g} ({over.size} user(s) refused)"
            )
        self.spent += total

    def spend_event(
        self, users: np.ndarray | int, event: dp_accounting.DpEvent, count: int = 1
    ) -> None:
        """:meth:`spend` ``count`` copies of ``event`` at its pure epsilon (presence side for
        a one-sided bit flip, as its guarantee states).

        Raises :class:`~dprec.privacy.accountant.UnsupportedEventError` for events without
        a pure epsilon (e.g. Gaussian).
        """
        self.spend(users, self.cost(event, count))

    @staticmethod
    def cost(event: dp_accounting.DpEvent, count: int = 1) -> float:
        """The pure epsilon of ``count`` copies of ``event`` (basic composition)."""
        if isinstance(count, bool) or int(count) != count or count < 0:
            raise DprecError(f"count must be an integer >= 0, got {count!r}")
        eps, _ = BasicAccountant().total_epsilon_delta(event)
        return 0.0 if count == 0 else int(count) * eps

    @classmethod
    def from_log(cls, log: EventLog, budget_eps: float = math.inf) -> PrivacyLedger:
        """The ledger of everything in ``log`` under basic composition.

        ``spent[u] = sum_j count_j(u) eps_j`` over the log's (event, unit) pairs, with the
        presence-side epsilon of bit flips when any event is one-sided, exactly as
        :func:`~dprec.privacy.levels.account` computes ``user_basic``. What happened is
        recorded even past ``budget_eps`` (check :meth:`remaining`).
        """
        ledger = cls(budget_eps, log.n_users)
        keys, counts = log.count_matrix("user")
        events = [e for e, _ in keys]
        basic = BasicAccountant()
        sides = basic.compose([(e, 1) for e in events]).sides
        direction: Direction = "presence" if sides == "one" else "two"
        eps = np.array([basic.total_epsilon_delta(e, direction)[0] for e in events])
        with np.errstate(invalid="ignore"):  # inf x 0 counts
            ledger.spent = np.where(counts > 0, counts * eps, 0.0).sum(axis=1)
        return ledger
