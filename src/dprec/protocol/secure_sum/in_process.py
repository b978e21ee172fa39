"""The in-process proxy of a secure-sum system: what the secure sum hands the server each round.

It forwards ONE batch per round, the exact integer sum of the round's client vectors (what
the cryptographic secure sum releases to the server, bit for bit; issue 23 §1), and only once
``threshold`` (= ``min_honest``) clients contributed: fewer honest shares than ``min_honest``
would carry less noise than the guarantee is calibrated for, and a second batch would reveal
the sum of a subset (docs/secure_sum.md, "One batch per round"). A sharded run sums in its
shards and hands the total to :meth:`InProcessSumProxy.forward_sum`.

With a validity ``check`` (:class:`~dprec.protocol.secure_sum.vdaf.contribution.ContributionCheck`,
the one the deployed round's Prio3 proofs are written for) it refuses each client vector the
proof would refuse, on the circuit's own predicate evaluated on the plaintext
(:meth:`~dprec.protocol.secure_sum.vdaf.contribution.ContributionCheck.refusals`), and
counts it as ``refused`` with its reason; the round goes on without it. A sharded run sums
in its shards, where no vector is checked.

dp-pop, dpals and dp-fedavg subclass it with what differs: their name, the message they sum
when it is not a :class:`~dprec.protocol.secure_sum.wire.ClientBlock` (dp-pop's), and whether
the simulation makes a key pair of its own (over the services the proxy's published key is
adopted instead).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, ClassVar

import numpy as np

from dprec.errors import DprecError
from dprec.protocol.engine import Proxy
from dprec.protocol.secure_sum.published import PUBLISHED_KEY, hex_key
from dprec.protocol.secure_sum.sealed import KEY_BYTES, KeyPair
from dprec.protocol.secure_sum.vdaf.contribution import ContributionCheck
from dprec.protocol.secure_sum.wire import ClientBlock, ExactSum

__all__ = ["OUTCOMES", "PUBLISHED_KEY", "InProcessSumProxy", "total_outcomes"]

OUTCOMES = ("summed", "refused", "below_threshold", "lost")
"""The one outcome of every acknowledged upload (:mod:`dprec.services.rounds`)."""


CHECK_CELLS = 1 << 22
"""Numbers of client vectors checked at once (rows x length)."""


def total_outcomes(rounds: list[dict[str, int]]) -> dict[str, int]:
    """How many uploads of all ``rounds`` ended in each outcome (:data:`OUTCOMES`)."""
    return {k: sum(int(r.get(k, 0)) for r in rounds) for k in OUTCOMES}



class InProcessSumProxy(Proxy):
    """Sums the round's client messages (:class:`ClientBlock` unless a system says
    otherwise) into one :class:`ExactSum`, once ``threshold`` clients sent; never a second
    batch. It draws nothing from the run's generator."""

    system: ClassVar[str]
    """Whose proxy, for errors (e.g. ``"dp-pop's"``)."""
    accepts: ClassVar[type] = ClientBlock
    """The client message it sums (each has ``n_clients``)."""
    accepts_plural: ClassVar[str] = "ClientBlocks"
    """That message's name in the plural, for errors."""
    key_in_process: ClassVar[bool] = True
    """Whether :meth:`start` makes a key pair (the in-process clients then seal to it)."""

    def __init__(self, threshold: int,
                 check: ContributionCheck | Sequence[ContributionCheck] | None = None) -> None:
        if isinstance(threshold, bool) or int(threshold) != threshold or threshold < 1:
            raise DprecError(f"threshold must be an integer >= 1, got {threshold!r}")
        self.threshold = int(threshold)
        self.check = check
        """The validity check each client vector must pass: one for every round, or one per
        round (indexed by the message's ``round``); None: every vector is summed."""
        self.refused_reasons: dict[str, int] = {}
        """Refused client vectors by reason, over all rounds (``check.refusals``)."""
        self.senders = 0
        self.batches: list[int] = []
        """Senders in each batch the server received in the last round (one, or none)."""
        self.public_key: bytes | None = None
        """The key clients seal their mask seeds to (None: nothing is sealed)."""
        self.outcomes: list[dict[str, int]] = []
        """Per round, how many uploads ended in each outcome (:data:`OUTCOMES`); over the
        services, the proxy service's count (:class:`~dprec.services.transport.RemoteProxy`)."""

    def part(self, message: Any) -> np.ndarray:
        """One accepted message's vectors, summed (int64): a :class:`ClientBlock`'s total."""
        if message.total is None:
            raise DprecError("device clients form no total: their uploads go through the "
                             "services' secure sum, not the in-process proxy")
        return message.total

    def batch(self, total: np.ndarray, senders: int) -> ExactSum:
        """The batch the server receives: the exact sum ``total`` of ``senders`` clients."""
        return ExactSum(total, senders)

    def row_chunks(self, message: Any) -> Iterator[np.ndarray]:
        """One message's client vectors, one row per client, about :data:`CHECK_CELLS`
        numbers at a time (what :attr:`check` reads): ``message.vectors``, an array, or
        a callable that builds the rows on demand (dpals', dp-fedavg's blocks)."""
        if not callable(message.vectors):
            yield np.asarray(message.vectors)
            return
        rows: list[np.ndarray] = []
        cells = 0
        for row in message.vectors():
            rows.append(np.asarray(row))
            cells += rows[-1].size
            if cells >= CHECK_CELLS:
                yield np.stack(rows)
                rows, cells = [], 0
        if rows:
            yield np.stack(rows)

    def check_for(self, message: Any) -> ContributionCheck | None:
        """The check ``message``'s vectors must pass (:attr:`check`, per round if a list)."""
        if self.check is None or isinstance(self.check, ContributionCheck):
            return self.check
        if not 0 <= int(message.round) < len(self.check):
            raise DprecError(f"{self.system} proxy has checks for {len(self.check)} rounds, "
                             f"got round {message.round}")
        return self.check[int(message.round)]

    def checked_part(self, message: Any, check: ContributionCheck
                     ) -> tuple[np.ndarray | None, int, int]:
        """(sum of the accepted rows, accepted, refused) of one message under ``check``;
        each refusal counted in :attr:`refused_reasons`."""
        total: np.ndarray | None = None
        accepted = refused = 0
        for rows in self.row_chunks(message):
            why = check.refusals(rows)
            ok = why == ""
            for reason in why[~ok]:
                key = f"validity: {reason}"
                self.refused_reasons[key] = self.refused_reasons.get(key, 0) + 1
            part = np.asarray(rows)[ok].astype(np.int64).sum(axis=0)
            total = part if total is None else total + part
            accepted, refused = accepted + int(ok.sum()), refused + int((~ok).sum())
        return total, accepted, refused

    def start(self, rng: np.random.Generator) -> None:
        """With :attr:`key_in_process`, a key pair from the OS CSPRNG (never from ``rng``: it
        changes no sum)."""
        if self.key_in_process:
            self.public_key = KeyPair().public

    def adopt_published(self, published: dict[str, Any]) -> None:
        """Over the services: the proxy's published key is what clients seal seeds to."""
        self.public_key = hex_key(published.get(PUBLISHED_KEY), KEY_BYTES,
                                  f"the proxy publishes no {KEY_BYTES}-byte secure-sum key")

    def forward(self, messages: Iterable[Any]) -> Iterator[Any]:
        total: np.ndarray | None = None
        senders = refused = 0
        for m in messages:
            if not isinstance(m, self.accepts):
                raise DprecError(f"{self.system} proxy sums {self.accepts_plural}, got "
                                 f"{type(m).__name__}")
            check = self.check_for(m)
            if check is None:
                part, accepted = self.part(m), m.n_clients
            else:
                part, accepted, bad = self.checked_part(m, check)
                refused += bad
            if part is not None:
                total = part.copy() if total is None else total + part
            senders += accepted
        batch = self.forward_sum(total, senders, refused)
        if batch is not None:
            yield batch

    def forward_sum(self, total: np.ndarray | None, senders: int, refused: int = 0) -> Any:
        """The round's one batch from the exact sum of ``senders`` clients' vectors (summed
        here, or by the shards of a sharded run; ``refused`` more were refused by the
        check); None below the threshold."""
        self.senders = int(senders)
        self.batches = []
        self.forwarded = total is not None and self.senders >= self.threshold
        self.outcomes.append({"summed": self.senders if self.forwarded else 0,
                              "refused": int(refused),
                              "below_threshold": 0 if self.forwarded else self.senders,
                              "lost": 0})
        if not self.forwarded:
            return None
        self.batches = [self.senders]
        return self.batch(np.asarray(total, np.int64), self.senders)

    def account(self, event: Any) -> Any:
        """The event itself: one batch carries the round's whole noise."""
        if len(self.batches) != 1:
            raise DprecError(f"a secure-sum round must reach the server as one batch, got "
                             f"{len(self.batches)}: each batch would reveal its own sum")
        return event
