"""The round engine, written once: clients -> proxy -> server -> broadcast, for T rounds.

Roles (docs/architecture.md, roles), after Flower's strategy/client split:

- :class:`Clients`: a population of simulated clients, vectorised over users. It holds the
  raw histories and each user's ledger; ``step(broadcast, round, rng)`` yields the messages
  the clients send this round and ``sent()`` says which users sent which privacy events.
- :class:`Proxy`: :class:`PassThrough` (no proxy: DPLCF) or :class:`ShufflingProxy` (the
  shuffler of FMF-LDP: strips identities, forwards shuffled batches or nothing; each
  forwarded user is charged the round's smallest batch).
- :class:`Server`: ``start(rng)`` gives the first broadcast (or None), ``aggregate(batches,
  round)`` consumes the forwarded batches of one round and returns the next broadcast, or
  None when nothing reached it (the round is then recorded as skipped).
- :class:`Transport`: how messages travel. :class:`InProcess` hands objects over;
  :class:`Serialising` passes every message through ``to_bytes``/``from_bytes`` (what the
  services' HTTP transport does); :meth:`Transport.connect` lets a network transport stand
  in for the server and proxy roles, which then run in their own processes.
- :class:`RoundExecutor`: who does one round's work. :meth:`Transport.executor` gives
  :class:`Pipeline` (clients -> proxy -> server through the transport); the sharded
  backends of :mod:`dprec.distributed` give theirs (clients in shards, integer partial sums).

The round loop is written once, in :func:`run_rounds`: the server's and proxy's start, the
rounds, the event log, the round records and the :class:`~dprec.iteration.IterationHook`.
It appends to an :class:`~dprec.privacy.events.EventLog` only what actually reached the
server: the users whose reports were forwarded, in rounds that ran.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from dprec.errors import DprecError
from dprec.iteration import IterationHook
from dprec.privacy.events import EventLog, ShuffledReportDpEvent
from dprec.protocol.batches import ReportBatch
from dprec.protocol.messages import ItemMatrix
from dprec.protocol.shuffler import Shuffler, ShuffleRefusedError

log = logging.getLogger(__name__)

__all__ = [
    "Clients",
    "InProcess",
    "PassThrough",
    "Pipeline",
    "Proxy",
    "RoundExecutor",
    "RoundRecord",
    "RoundResult",
    "Sent",
    "Serialising",
    "Server",
    "ShufflingProxy",
    "Transport",
    "client_ids",
    "forwarded_batch_sizes",
    "run_protocol",
    "run_rounds",
]


@dataclass(frozen=True)
class Sent:
    """``users`` each sent ``count`` reports produced by ``event`` (a DpEvent) this round."""

    event: Any
    users: np.ndarray
    count: int = 1
    unit: Literal["interaction", "user"] = "user"


class Clients(ABC):
    """A population of clients; each client's history and ledger stay here."""

    @abstractmethod
    def step(self, broadcast: Any, round: int, rng: np.random.Generator) -> Iterator[Any]:
        """The messages sent this round, given the server's broadcast."""

    @abstractmethod
    def sent(self) -> list[Sent]:
        """Who sent what in the round :meth:`step` just ran (read after it is exhausted)."""


def client_ids(ids: np.ndarray | None, n_rows: int) -> np.ndarray:
    """Global user ids of a population's ``n_rows`` history rows (default 0..n_rows-1)."""
    if ids is None:
        return np.arange(n_rows, dtype=np.int64)
    out = np.asarray(ids)
    if out.shape != (n_rows,) or (out.size and not np.issubdtype(out.dtype, np.integer)):
        raise DprecError(f"ids must be {n_rows} integer user ids, got shape {out.shape}, "
                         f"dtype {out.dtype}")
    return out.astype(np.int64, copy=False)


class Server(ABC):
    """The untrusted aggregator: sees only forwarded batches, publishes broadcasts."""

    public: tuple[str, ...] = ()
    """The role's attributes that are public parameters of its protocol: what must agree
    between a simulation's role and a service's
    (:func:`~dprec.services.roles.describe_role`)."""

    @abstractmethod
    def start(self, rng: np.random.Generator) -> Any:
        """The first broadcast (None when the protocol starts with the clients)."""

    @abstractmethod
    def aggregate(self, batches: Iterable[Any], round: int) -> Any:
        """Consume one round's forwarded batches; the next broadcast, or None if none came."""


class Transport(ABC):
    """Carries a message from one role to the next."""

    @abstractmethod
    def carry(self, message: Any) -> Any:
        """The message as the receiver gets it."""

    def connect(self, server: Server, proxy: Proxy) -> tuple[Server, Proxy]:
        """The server and proxy as this transport reaches them: the given objects (in one
        process), or stubs of the same roles running in other processes (the services'
        :class:`~dprec.services.transport.HttpTransport`)."""
        return server, proxy

    def executor(self, server: Server, clients: Clients, proxy: Proxy) -> RoundExecutor:
        """Who runs the rounds of ``clients`` with the (connected) ``server`` and ``proxy``:
        a :class:`Pipeline` through this transport."""
        return Pipeline(self, server, clients, proxy)


class InProcess(Transport):
    """Objects are handed over as they are (the simulation's default)."""

    def carry(self, message: Any) -> Any:
        return message


class Serialising(Transport):
    """Every message travels as bytes: ``type(m).from_bytes(m.to_bytes())``."""

    def __init__(self) -> None:
        self.bytes_carried = 0

    def carry(self, message: Any) -> Any:
        if message is None:
            return None
        if isinstance(message, np.ndarray):
            return ItemMatrix.from_bytes(ItemMatrix(message).to_bytes()).matrix.astype(np.float64)
        if isinstance(message, ReportBatch):
            return ReportBatch.from_messages([self.carry(m) for m in message.to_messages()])
        data = message.to_bytes()
        self.bytes_carried += len(data)
        return type(message).from_bytes(data)


class Proxy(ABC):
    """Between clients and server."""

    forwarded: bool = False
    """Whether the last round's reports reached the server."""

    @abstractmethod
    def forward(self, messages: Iterable[Any]) -> Iterator[Any]:
        """The batches the server receives for one round's client messages."""

    def start(self, rng: np.random.Generator) -> None:  # noqa: B027 - optional hook
        """Seed the proxy's own randomness (called once, after the server's start)."""

    def account(self, event: Any) -> Any:
        """The event as the server sees it (after this proxy)."""
        return event


class PassThrough(Proxy):
    """No proxy: every client message reaches the server as sent (streamed)."""

    def forward(self, messages: Iterable[Any]) -> Iterator[Any]:
        self.forwarded = False
        for m in messages:
            self.forwarded = True
            yield m


def forwarded_batch_sizes(senders: int, threshold: int, batch_senders: int | None
                          ) -> list[int]:
    """Senders per batch a proxy forwards for a round of ``senders`` distinct senders.

    The services' proxy (:mod:`dprec.services.proxy`) queues a batch of ``batch_senders``
    whenever it holds ``batch_senders + threshold`` submissions, and at close forwards the
    rest if they number ``threshold`` or more: ``m = (senders - threshold) // batch_senders``
    full batches, then one of ``senders - m * batch_senders`` (in ``[threshold,
    batch_senders + threshold)``), whatever the arrival order. Below ``threshold``: nothing
    (a refused round). ``batch_senders`` None: one batch of every sender.
    """
    for name, v in (("senders", senders), ("threshold", threshold)):
        if isinstance(v, bool) or int(v) != v or v < (0 if name == "senders" else 1):
            raise DprecError(f"{name} must be an integer >= {0 if name == 'senders' else 1}, "
                             f"got {v!r}")
    if batch_senders is not None and (isinstance(batch_senders, bool)
                                      or int(batch_senders) != batch_senders
                                      or batch_senders < threshold):
        raise DprecError(f"batch_senders must be an integer >= threshold ({threshold}), got "
                         f"{batch_senders!r}")
    if senders < threshold:
        return []
    if batch_senders is None:
        return [int(senders)]
    full = (int(senders) - int(threshold)) // int(batch_senders)
    return [int(batch_senders)] * full + [int(senders) - full * int(batch_senders)]


def _stack(parts: list[Any], name: str) -> np.ndarray | None:
    arrays = [getattr(m, name) for m in parts]
    return None if arrays[0] is None else np.concatenate(arrays)


class ShufflingProxy(Proxy):
    """The shuffler (FMF-LDP step 4): shuffled batches of at least ``threshold`` senders
    per round, or nothing.

    ``batch_senders`` None: one batch per round (the paper's proxy). Otherwise the batches
    of the services' proxy (:func:`forwarded_batch_sizes`), each a uniformly random subset
    of the round's senders shuffled on its own, so a simulation can state the deployment's
    batch structure. Shufflers draw from the proxy's own generator; reports held in a
    refused round are dropped, never carried over.

    Accounting (:meth:`account`): each report lies in exactly one batch and the batches are
    disjoint, so what the server sees of one user's report is the shuffle of its batch
    (parallel composition; the other batches do not depend on it). Which batch holds which
    user is not kept (the services' proxy keeps no such mapping), so every forwarded user
    of the round is charged :class:`~dprec.privacy.events.ShuffledReportDpEvent` over the
    round's smallest batch, ``n = min(batches)`` (Feldman, McMillan, Talwar, FOCS 2021).
    """

    def __init__(self, threshold: int, rng: np.random.Generator | None = None,
                 batch_senders: int | None = None) -> None:
        forwarded_batch_sizes(0, threshold, batch_senders)  # validates both
        self.threshold = int(threshold)
        self.batch_senders = None if batch_senders is None else int(batch_senders)
        self._rng = rng
        self.senders = 0
        self.batches: list[int] = []
        """Senders in each batch forwarded in the last round (what the server received)."""
        self.last: Shuffler | None = None

    def record_forwarded(self, senders: int, batches: list[int]) -> None:
        """Record a round forwarded elsewhere (a sharded run's driver, which sums instead of
        shuffling): ``senders`` distinct senders in ``batches`` (senders per batch, as
        :func:`forwarded_batch_sizes` gives them; non-empty, each at least the threshold)."""
        if not batches or sum(batches) != senders or min(batches) < self.threshold:
            raise DprecError(f"a forwarded round needs batches of at least {self.threshold} "
                             f"senders summing to {senders}, got {batches}")
        self.senders = int(senders)
        self.batches = [int(b) for b in batches]
        self.forwarded = True

    def start(self, rng: np.random.Generator) -> None:
        """Draw the proxy's own generator from the simulation stream (unless given one)."""
        if self._rng is None:
            self._rng = np.random.default_rng(rng.integers(2**63))

    def forward(self, messages: Iterable[Any]) -> Iterator[Any]:
        if self._rng is None:
            raise DprecError("start the shuffling proxy before forwarding")
        self.forwarded = False
        self.senders = 0
        self.batches = []
        if self.batch_senders is not None:
            yield from self._forward_batches(list(messages))
            return
        shuffler = Shuffler(self.threshold, self._rng)
        self.last = shuffler
        for m in messages:
            shuffler.submit_batch(m.items, m.factors, m.bits, m.client_ids, values=m.values)
        self.senders = shuffler.senders
        try:
            batch = shuffler.flush()
        except ShuffleRefusedError as e:
            log.info("shuffler refused the round: %s", e)
            return
        self.forwarded = True
        self.batches = [self.senders]
        yield batch

    def _forward_batches(self, parts: list[Any]) -> Iterator[Any]:
        """The services' batches: the round's senders in a random order, cut into
        :func:`forwarded_batch_sizes`, each batch shuffled by its own :class:`Shuffler`."""
        assert self._rng is not None
        n = int(sum(m.n_clients for m in parts))
        self.senders = n
        sizes = forwarded_batch_sizes(n, self.threshold, self.batch_senders)
        if not sizes:
            log.info("shuffler refused the round: %d senders, below the threshold %d", n,
                     self.threshold)
            return
        ids, items, factors = (_stack(parts, a) for a in ("client_ids", "items", "factors"))
        bits, values = _stack(parts, "bits"), _stack(parts, "values")
        order = self._rng.permutation(n)
        self.forwarded = True
        self.batches = sizes
        at = 0
        for size in sizes:
            rows = order[at:at + size]
            at += size
            shuffler = Shuffler(self.threshold, self._rng)
            self.last = shuffler
            shuffler.submit_batch(items[rows], factors[rows],  # type: ignore[index]
                                  None if bits is None else bits[rows],
                                  ids[rows],  # type: ignore[index]
                                  values=None if values is None else values[rows])
            yield shuffler.flush()

    def account(self, event: Any) -> Any:
        eps = getattr(event, "epsilon", None)
        if eps is None:
            raise DprecError(f"the shuffler can only account pure LDP report events, got {event}")
        if not self.batches:
            raise DprecError("the shuffling proxy forwarded no batch this round: nothing to "
                             "account")
        return ShuffledReportDpEvent(float(eps), int(min(self.batches)))


class RoleTimer:
    """Seconds spent in each role, exclusive of the roles it pulls from (lazy pipelines)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {"clients": 0.0, "proxy": 0.0, "server": 0.0}
        self._stack: list[list[float]] = []

    def _enter(self) -> None:
        self._stack.append([time.perf_counter(), 0.0])

    def _leave(self, role: str) -> None:
        start, inner = self._stack.pop()
        spent = time.perf_counter() - start
        self.seconds[role] += spent - inner
        if self._stack:
            self._stack[-1][1] += spent

    def iterate(self, items: Iterable[Any], role: str) -> Iterator[Any]:
        """``items``, with the time spent producing each charged to ``role``."""
        it = iter(items)
        while True:
            self._enter()
            try:
                item = next(it)
            except StopIteration:
                self._leave(role)
                return
            self._leave(role)
            yield item

    def call(self, role: str, fn: Callable[..., Any], *args: Any) -> Any:
        self._enter()
        try:
            return fn(*args)
        finally:
            self._leave(role)


@dataclass
class RoundRecord:
    """What happened in one round."""

    round: int
    updated: bool
    senders: int


@dataclass(frozen=True)
class RoundResult:
    """One round's work as a :class:`RoundExecutor` finished it."""

    broadcast: Any
    """The server's next broadcast; None when nothing reached the server."""
    sent: list[Sent]
    """Who sent what (recorded in the event log only when the round updated)."""
    senders: int
    """Distinct clients that sent this round."""


class RoundExecutor(ABC):
    """Does the work of one round for :func:`run_rounds`, which owns everything else."""

    server: Server
    proxy: Proxy

    @abstractmethod
    def round(self, broadcast: Any, round: int, rng: np.random.Generator,
              timer: RoleTimer) -> RoundResult:
        """Round ``round`` from ``broadcast``: the clients' step, what the proxy forwards
        and the server's step (time charged to the roles on ``timer``)."""

    def finish(self) -> None:  # noqa: B027 - optional hook
        """After the last round of a run that completed."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """After the run, whatever its outcome: release what :meth:`round` acquired."""


class Pipeline(RoundExecutor):
    """Clients -> proxy -> server in this process, every message through ``transport``
    (streamed: the proxy pulls the clients' messages, the server the proxy's batches)."""

    def __init__(self, transport: Transport, server: Server, clients: Clients,
                 proxy: Proxy) -> None:
        self.transport, self.server, self.clients, self.proxy = transport, server, clients, proxy

    def round(self, broadcast: Any, round: int, rng: np.random.Generator,
              timer: RoleTimer) -> RoundResult:
        carry = self.transport.carry
        received = carry(broadcast)
        up = (carry(m) for m in timer.iterate(self.clients.step(received, round, rng),
                                              "clients"))
        batches = (carry(b) for b in timer.iterate(self.proxy.forward(up), "proxy"))
        new = timer.call("server", self.server.aggregate, batches, round)
        sent = self.clients.sent()
        return RoundResult(new if self.proxy.forwarded else None, sent,
                           int(sum(len(s.users) for s in sent)))


@dataclass
class ProtocolRun:
    """The outcome of :func:`run_protocol`."""

    broadcast: Any
    rounds: list[RoundRecord] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    """Wall time per role (clients, proxy, server), each exclusive of the others."""

    @property
    def rounds_without_update(self) -> int:
        return sum(not r.updated for r in self.rounds)


def _rounds(rounds: int) -> int:
    if isinstance(rounds, bool) or int(rounds) != rounds or rounds < 1:
        raise DprecError(f"rounds must be an integer >= 1, got {rounds}")
    return int(rounds)


def run_protocol(
    server: Server,
    clients: Clients,
    rounds: int,
    rng: np.random.Generator,
    log_: EventLog,
    proxy: Proxy | None = None,
    transport: Transport | None = None,
    on_iteration: IterationHook | None = None,
) -> ProtocolRun:
    """Run ``rounds`` rounds; events of forwarded reports go to ``log_``.

    The simulation draws every role's randomness from ``rng`` in protocol order (server
    start, then each round's clients); a deployment gives each role its own CSPRNG.
    ``on_iteration(round, broadcast)`` is called after every round that updated the
    broadcast. ``transport`` carries the messages, or executes the rounds in shards (a
    :class:`~dprec.distributed.backend.ShardedBackend`); the loop is :func:`run_rounds`.
    """
    rounds = _rounds(rounds)
    transport = transport or InProcess()
    server, proxy = transport.connect(server, proxy or PassThrough())
    return run_rounds(transport.executor(server, clients, proxy), rounds, rng, log_,
                      on_iteration)


def run_rounds(executor: RoundExecutor, rounds: int, rng: np.random.Generator,
               log_: EventLog, on_iteration: IterationHook | None = None) -> ProtocolRun:
    """The round loop, for every executor: start the server (its first broadcast) and the
    proxy, run ``rounds`` rounds, record each updated round's forwarded senders in ``log_``
    (their events as the proxy makes them, :meth:`Proxy.account`) and call
    ``on_iteration(round, broadcast)``; a round whose broadcast is None is recorded as
    skipped, with no event and no hook."""
    rounds = _rounds(rounds)
    server, proxy = executor.server, executor.proxy
    timer = RoleTimer()
    try:
        broadcast = timer.call("server", server.start, rng)
        proxy.start(rng)
        run = ProtocolRun(broadcast, seconds=timer.seconds)
        for r in range(rounds):
            result = executor.round(broadcast, r, rng, timer)
            if result.broadcast is None:
                run.rounds.append(RoundRecord(r, False, result.senders))
                log.info("round %d: no update reached the server", r)
                continue
            for s in result.sent:
                log_.record(r, proxy.account(s.event), s.users, count=s.count, unit=s.unit)
            broadcast = result.broadcast
            run.broadcast = broadcast
            run.rounds.append(RoundRecord(r, True, result.senders))
            if on_iteration is not None:
                on_iteration(r, broadcast)
        executor.finish()
    finally:
        executor.close()
    return run
