"""The services' embedded store: SQLite in WAL mode, one transaction per accepted request.

Server (:class:`ServerStore`): every accepted batch is written with its idempotency key in one
transaction, committed (``synchronous=FULL``: on disk) before the request is acknowledged; closing
a round writes the round's outcome, the new broadcast and the next round number in one transaction.
A server killed at any moment therefore restarts with every acknowledged batch, and a batch sent
again under the same key is recognised and not counted twice.

Proxy (:class:`ProxyStore`): what it holds is a bag, never a mapping from sender to report:

- ``seen``: the senders of the open round, each as an HMAC of (round, client id) under the
  proxy's token key (enough to refuse a second submission, not the id itself);
- ``held``: the submissions waiting to be forwarded, stripped of the sender's id and keyed
  by a random 128-bit key (so the table's order is random, not the arrival order);
- ``outbox``: shuffled batches formed but not yet acknowledged by the server;
- ``refusals``: why the server refused an outbox batch it may still take (its status and
  message), until it takes it;
- ``ids``: the unique ids of the open round's accepted submissions, for protocols that have
  them (a secure sum's message ids), so a replay is refused across a restart.

Per round, the ``meta`` table counts what became of the acknowledged submissions: formed into
batches (``forwarded``), accepted by the server (``delivered``, with each accepted batch's
senders), refused at the close for being fewer than the threshold (``below_threshold``) and lost
(``lost``: the server closed the round before it took them).

A submission writes its ``seen`` tag and its ``held`` row in one transaction. Forming a batch moves
rows from ``held`` to ``outbox`` in one transaction; deleted rows are overwritten
(``secure_delete``), and the WAL is checkpointed and truncated when a round closes. What stays
possible: someone reading the disk (and holding the token key) while a round is open could match
WAL frames written by the same transaction; the proxy keeps no such mapping itself, and none
survives the round."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from dprec.errors import DprecError

__all__ = ["STATE_DIR_MODE", "STATE_FILE_MODE", "Duplicate", "ProxyStore", "Replayed",
           "ServerStore", "Sync", "open_db"]

Sync = Literal["full", "normal"]


STATE_DIR_MODE = 0o700
"""Mode of a service's state folder: its owner only (it holds keys and held uploads)."""
STATE_FILE_MODE = 0o600
"""Mode of the database and of SQLite's ``-wal`` and ``-shm`` files beside it."""


def _private_files(path: Path) -> None:
    """The database ``path`` and SQLite's files beside it, readable by the owner only
    (SQLite creates ``-wal`` and ``-shm`` with the database's mode; older state is
    tightened on open)."""
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, STATE_FILE_MODE))
    for f in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        if f.exists():
            os.chmod(f, STATE_FILE_MODE)


def open_db(path: Path, sync: Sync = "full", secure_delete: bool = False) -> sqlite3.Connection:
    """A connection in autocommit mode (explicit BEGIN IMMEDIATE ... COMMIT), WAL journal.

    The folder is made mode 0700 and the database's files 0600 (:data:`STATE_DIR_MODE`,
    :data:`STATE_FILE_MODE`), whatever the umask: the server's state holds its private
    key, the proxy's the uploads it holds."""
    if sync not in ("full", "normal"):
        raise DprecError(f"sync must be full or normal, got {sync!r}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=STATE_DIR_MODE)
        if not path.parent.is_dir():
            raise NotADirectoryError(20, "not a directory")
        os.chmod(path.parent, STATE_DIR_MODE)
        _private_files(path)
        db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        mode = db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        _private_files(path)
    except (OSError, sqlite3.Error) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise DprecError(f"cannot keep the state in {path.parent} (it must be a folder this "
                         f"process can write): {why}") from None
    if str(mode).lower() != "wal":
        raise DprecError(f"{path}: SQLite refused WAL mode (got {mode})")
    db.execute(f"PRAGMA synchronous={sync.upper()}")
    db.execute("PRAGMA busy_timeout=5000")
    if secure_delete:
        db.execute("PRAGMA secure_delete=ON")
    return db


@contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _meta(db: sqlite3.Connection, key: str, default: Any = None) -> Any:
    row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return default if row is None else json.loads(row[0])


def _set_meta(db: sqlite3.Connection, key: str, value: Any) -> None:
    db.execute("INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET "
               "value = excluded.value", (key, json.dumps(value)))


class StoreConflict(DprecError):
    """The request conflicts with what the store holds (wrong round, key reuse, ...)."""


# -- server ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class RoundOutcome:
    """What closing a round did."""

    round: int
    updated: bool
    version: int
    """Version of the broadcast in force after the round."""
    reports: int
    batches: int
    diagnostics: dict[str, Any]
    batch_senders: tuple[int, ...] = ()
    """Senders in each accepted batch, largest first: the shuffles the server saw (what the
    privacy accounting reads). Empty in outcomes stored before it was recorded."""

    def to_json(self) -> dict[str, Any]:
        return {"round": self.round, "updated": self.updated, "version": self.version,
                "reports": self.reports, "batches": self.batches,
                "batch_senders": list(self.batch_senders), "diagnostics": self.diagnostics}


_SERVER_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS broadcasts(version INTEGER PRIMARY KEY, body BLOB NOT NULL,
                                      digest TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS rounds(round INTEGER PRIMARY KEY, outcome TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS batches(key TEXT PRIMARY KEY, round INTEGER NOT NULL,
                                   digest TEXT NOT NULL, reports INTEGER NOT NULL,
                                   body BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS batches_round ON batches(round);
CREATE TABLE IF NOT EXISTS kept(round INTEGER NOT NULL, id BLOB NOT NULL, body BLOB NOT NULL,
                                PRIMARY KEY(round, id)) WITHOUT ROWID;
"""


def _check_open(db: sqlite3.Connection, round: int, rounds: int) -> None:
    """Raise :class:`StoreConflict` unless the protocol has started and ``round`` is open."""
    if _meta(db, "start") is None:
        raise StoreConflict("the protocol has not started")
    open_round = int(_meta(db, "round", 0))
    if open_round >= rounds:
        raise StoreConflict(f"the protocol has finished ({rounds} rounds)")
    if round != open_round:
        raise StoreConflict(f"round {round} is not open; the open round is {open_round}")


class ServerStore:
    """The server's durable state: protocol, start, round number, broadcasts, batches."""

    def __init__(self, path: Path, fingerprint: str, sync: Sync = "full") -> None:
        self.db = open_db(path, sync)
        self.db.executescript(_SERVER_SCHEMA)
        with _transaction(self.db):
            held = _meta(self.db, "protocol")
            if held is None:
                _set_meta(self.db, "protocol", fingerprint)
            elif held != fingerprint:
                raise DprecError(f"the state in {path} belongs to another protocol or "
                                 "configuration; give this one its own --state directory")

    # reads
    @property
    def started(self) -> bool:
        return _meta(self.db, "start") is not None

    def start_record(self) -> dict[str, Any] | None:
        return _meta(self.db, "start")

    @property
    def round(self) -> int:
        """The open round (the number of rounds closed so far)."""
        return int(_meta(self.db, "round", 0))

    @property
    def version(self) -> int | None:
        """Version of the latest broadcast (None before the start or before DPLCF's round)."""
        return _meta(self.db, "version")

    def broadcast(self, version: int | None = None) -> tuple[bytes, str] | None:
        v = self.version if version is None else version
        if v is None:
            return None
        row = self.db.execute("SELECT body, digest FROM broadcasts WHERE version = ?",
                              (v,)).fetchone()
        return None if row is None else (bytes(row[0]), str(row[1]))

    def outcomes(self) -> list[dict[str, Any]]:
        return [json.loads(r[0]) for r in
                self.db.execute("SELECT outcome FROM rounds ORDER BY round")]

    def batches(self, round: int) -> Iterator[bytes]:
        """The accepted batches of ``round``, in key order (the result does not depend on it)."""
        for (body,) in self.db.execute("SELECT body FROM batches WHERE round = ? ORDER BY key",
                                       (round,)):
            yield bytes(body)

    def batch_reports(self, round: int) -> list[int]:
        """Reports in each accepted batch of ``round``, largest first."""
        return sorted((int(r) for (r,) in self.db.execute(
            "SELECT reports FROM batches WHERE round = ?", (round,))), reverse=True)

    def batch_count(self, round: int) -> tuple[int, int]:
        row = self.db.execute("SELECT COUNT(*), COALESCE(SUM(reports), 0) FROM batches "
                              "WHERE round = ?", (round,)).fetchone()
        return int(row[0]), int(row[1])

    def kept(self, round: int, ids: list[bytes]) -> list[bytes | None]:
        """What :meth:`keep` stored for each of ``ids`` in ``round`` (None: nothing)."""
        rows = dict(self.db.execute(f"SELECT id, body FROM kept WHERE round = ? AND id IN "
                                    f"({','.join('?' * len(ids))})", (round, *map(bytes, ids))))
        return [None if rows.get(bytes(m)) is None else bytes(rows[bytes(m)]) for m in ids]

    # writes
    def keep(self, round: int, bodies: dict[bytes, bytes], rounds: int) -> None:
        """Keep, until the open ``round`` closes, what the role computed per upload at the
        share check (a proved sum's output shares, by message id; the first value stays)."""
        with _transaction(self.db):
            _check_open(self.db, round, rounds)
            self.db.executemany("INSERT OR IGNORE INTO kept VALUES(?, ?, ?)",
                                [(round, bytes(k), bytes(v)) for k, v in bodies.items()])

    def start(self, record: dict[str, Any], body: bytes | None, digest: str | None) -> None:
        """Persist the start (and the first broadcast) in one transaction."""
        with _transaction(self.db):
            if _meta(self.db, "start") is not None:
                raise StoreConflict("the protocol has already started")
            _set_meta(self.db, "start", record)
            _set_meta(self.db, "round", 0)
            if body is not None:
                self.db.execute("INSERT INTO broadcasts VALUES(0, ?, ?)", (body, digest))
                _set_meta(self.db, "version", 0)

    def accept(self, key: str, round: int, digest: str, reports: int, body: bytes,
               rounds: int, one_batch: bool = False) -> bool:
        """Persist a batch under ``key``; False if the same batch was accepted before.

        Raises :class:`StoreConflict` if ``key`` holds another batch, if ``round`` is not
        the open round (checked after the key, so a replay of an accepted batch is a
        duplicate, not an error), or, with ``one_batch``, if the round already holds
        another batch (a secure sum's round takes one release: a second would be counted
        twice, or reveal the sum of a subset).
        """
        with _transaction(self.db):
            row = self.db.execute("SELECT digest FROM batches WHERE key = ?", (key,)).fetchone()
            if row is not None:
                if row[0] != digest:
                    raise StoreConflict("the idempotency key names another batch")
                return False
            _check_open(self.db, round, rounds)
            if one_batch and self.db.execute("SELECT 1 FROM batches WHERE round = ?",
                                             (round,)).fetchone():
                raise StoreConflict(f"round {round} already holds its one batch: a second "
                                    "is refused")
            self.db.execute("INSERT INTO batches VALUES(?, ?, ?, ?, ?)",
                            (key, round, digest, reports, body))
        return True

    def close(self, round: int, rounds: int,
              compute: Callable[[], tuple[bytes | None, str | None, dict[str, Any]]],
              senders_of: Callable[[int], int] = int) -> RoundOutcome:
        """Close ``round`` once: ``compute()`` gives the new broadcast (None: no update),
        its digest and diagnostics; all of it, the senders of each accepted batch
        (``senders_of(reports)``) and the next round number, in one transaction. Closing a
        closed round returns what it did (idempotent)."""
        with _transaction(self.db):
            done = self.db.execute("SELECT outcome FROM rounds WHERE round = ?",
                                   (round,)).fetchone()
            if done is not None:
                o = json.loads(done[0])
                return RoundOutcome(**{**o, "batch_senders": tuple(o.get("batch_senders", ()))})
            _check_open(self.db, round, rounds)
            batches, reports = self.batch_count(round)
            body, digest, diag = compute()
            version = _meta(self.db, "version")
            if body is not None:
                version = round + 1
                self.db.execute("INSERT INTO broadcasts VALUES(?, ?, ?)",
                                (version, body, digest))
                _set_meta(self.db, "version", version)
            outcome = RoundOutcome(round, body is not None, -1 if version is None else version,
                                   reports, batches, diag,
                                   tuple(senders_of(r) for r in self.batch_reports(round)))
            self.db.execute("INSERT INTO rounds VALUES(?, ?)",
                            (round, json.dumps(outcome.to_json())))
            self.db.execute("DELETE FROM kept WHERE round <= ?", (round,))
            _set_meta(self.db, "round", round + 1)
        return outcome

    def close_db(self) -> None:
        self.db.close()


# -- proxy ----------------------------------------------------------------------------------

_PROXY_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS seen(round INTEGER NOT NULL, tag BLOB NOT NULL,
                                PRIMARY KEY(round, tag)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS held(round INTEGER NOT NULL, key BLOB NOT NULL, body BLOB NOT NULL,
                                PRIMARY KEY(round, key)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS outbox(key TEXT PRIMARY KEY, round INTEGER NOT NULL,
                                  senders INTEGER NOT NULL, body BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS rounds(round INTEGER PRIMARY KEY, outcome TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS refusals(key TEXT PRIMARY KEY, status INTEGER NOT NULL,
                                    error TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ids(round INTEGER NOT NULL, id BLOB NOT NULL,
                               PRIMARY KEY(round, id)) WITHOUT ROWID;
"""


def _add(db: sqlite3.Connection, key: str, n: int) -> None:
    _set_meta(db, key, int(_meta(db, key, 0)) + int(n))


class Duplicate(DprecError):
    """The sender already submitted in this round."""


class Replayed(Duplicate):
    """A submission of this round already carried the same unique id (a replay)."""


class ProxyStore:
    """The proxy's durable bag of held submissions (see the module docstring)."""

    def __init__(self, path: Path, sync: Sync = "full") -> None:
        self.path = path
        self.db = open_db(path, sync, secure_delete=True)
        self.db.executescript(_PROXY_SCHEMA)

    def meta(self, key: str, default: Any = None) -> Any:
        return _meta(self.db, key, default)

    def set_meta(self, key: str, value: Any) -> None:
        with _transaction(self.db):
            _set_meta(self.db, key, value)

    def hold(self, round: int, tag: bytes, body: bytes, unique: bytes | None = None) -> None:
        """Record the sender's tag and its anonymous submission together, or neither; with
        ``unique``, also that id. The sender is checked first: a sender's resend after a lost
        answer is :class:`Duplicate` (the client reads it as accepted), another sender's
        message carrying an id the round holds is :class:`Replayed`."""
        try:
            with _transaction(self.db):
                if self.submitted(round, tag):
                    raise Duplicate("this client already submitted in this round")
                if unique is not None and self.db.execute(
                        "SELECT 1 FROM ids WHERE round = ? AND id = ?",
                        (round, unique)).fetchone():
                    raise Replayed("a submission of this round already carried this id")
                self.db.execute("INSERT INTO seen VALUES(?, ?)", (round, tag))
                self.db.execute("INSERT INTO held VALUES(?, ?, ?)",
                                (round, os.urandom(16), body))
                if unique is not None:
                    self.db.execute("INSERT INTO ids VALUES(?, ?)", (round, unique))
        except sqlite3.IntegrityError:
            raise Duplicate("this client already submitted in this round") from None

    def submitted(self, round: int, tag: bytes) -> bool:
        """Whether the sender ``tag`` already submitted in ``round``."""
        return self.db.execute("SELECT 1 FROM seen WHERE round = ? AND tag = ?",
                               (round, tag)).fetchone() is not None

    def held(self, round: int) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM held WHERE round = ?",
                                   (round,)).fetchone()[0])

    def senders(self, round: int) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM seen WHERE round = ?",
                                   (round,)).fetchone()[0])

    def form_batch(self, round: int, limit: int | None,
                   shuffle: Callable[[list[bytes]], bytes]) -> int:
        """Move up to ``limit`` held submissions (all if None) into one shuffled batch in the
        outbox, in one transaction (with the round's count of forwarded senders); the number
        moved."""
        with _transaction(self.db):
            rows = self.db.execute(
                "SELECT key, body FROM held WHERE round = ? ORDER BY key LIMIT ?",
                (round, -1 if limit is None else int(limit))).fetchall()
            if not rows:
                return 0
            body = shuffle([bytes(r[1]) for r in rows])
            self.db.execute("INSERT INTO outbox VALUES(?, ?, ?, ?)",
                            (os.urandom(16).hex(), round, len(rows), body))
            self.db.executemany("DELETE FROM held WHERE round = ? AND key = ?",
                                [(round, r[0]) for r in rows])
            moved = len(rows)
            _set_meta(self.db, f"forwarded:{round}",
                      int(_meta(self.db, f"forwarded:{round}", 0)) + moved)
            _set_meta(self.db, f"batches:{round}",
                      [*_meta(self.db, f"batches:{round}", []), moved])
            del rows
        return moved

    def held_chunks(self, round: int, chunk_bytes: int) -> Iterator[list[bytes]]:
        """The bodies of ``round``'s held submissions in key order, in lists of about
        ``chunk_bytes`` (at least one body each): never all of them at once."""
        after, rows = b"", [b""]
        while rows:
            rows, size = [], 0
            for key, body in self.db.execute("SELECT key, body FROM held WHERE round = ? AND "
                                             "key > ? ORDER BY key", (round, after)):
                rows.append(bytes(body))
                size, after = size + len(body), bytes(key)
                if size >= chunk_bytes:
                    break
            if rows:
                yield rows

    def settle(self, round: int, release: bytes | None, released: list[str],
               refused: dict[str, str], below: list[str],
               lost: dict[str, str] | None = None) -> None:
        """An agreed release (:mod:`dprec.services.rounds`): in one transaction, queue
        ``release`` (the mask sum over exactly the uploads ``released``, hex message ids;
        None: nothing is released), forget every held submission of ``round``, and record
        each upload's verdict (``refused`` with its reason, ``below`` the threshold, ``lost``
        with its reason). Done once per round: a retry re-sends the queued release, never
        one over another set."""
        with _transaction(self.db):
            if _meta(self.db, f"uploads:{round}") is not None:
                return
            if release is not None:
                self.db.execute("INSERT INTO outbox VALUES(?, ?, ?, ?)",
                                (os.urandom(16).hex(), round, len(released), release))
                _add(self.db, f"forwarded:{round}", len(released))
                _set_meta(self.db, f"batches:{round}", [len(released)])
            self.db.execute("DELETE FROM held WHERE round = ?", (round,))
            _add(self.db, f"below_threshold:{round}", len(below))
            _add(self.db, f"refused:{round}", len(refused))
            _add(self.db, f"lost:{round}", len(lost or {}))
            _set_meta(self.db, f"uploads:{round}", {"released": sorted(released),
                                                    "refused": refused,
                                                    "below_threshold": sorted(below),
                                                    "lost": lost or {}})

    def uploads(self, round: int) -> dict[str, Any] | None:
        """The verdicts :meth:`settle` recorded for ``round`` (None: not settled)."""
        return _meta(self.db, f"uploads:{round}")

    def refused_senders(self, round: int) -> int:
        """Uploads of ``round`` refused at its agreed release (a share that failed)."""
        return int(_meta(self.db, f"refused:{round}", 0))

    def outcomes(self) -> list[dict[str, Any]]:
        """The outcome of every round this proxy closed, oldest first."""
        return [json.loads(r[0]) for r in
                self.db.execute("SELECT outcome FROM rounds ORDER BY round")]

    def drop_held(self, round: int) -> int:
        """Forget every held submission of ``round`` (a round below the threshold); counted
        as ``below_threshold``."""
        with _transaction(self.db):
            n = int(self.db.execute("DELETE FROM held WHERE round = ?", (round,)).rowcount)
            _add(self.db, f"below_threshold:{round}", n)
        return n

    def lose(self, round: int) -> int:
        """Count every submission of ``round`` still held or in the outbox as lost (the
        server closed the round before taking them) and forget them; the number lost. The
        server's last refusal of those batches, if any, is kept as :meth:`lost_reason`."""
        with _transaction(self.db):
            held = self.db.execute("DELETE FROM held WHERE round = ?", (round,)).rowcount
            queued = self.db.execute("SELECT key, senders FROM outbox WHERE round = ?",
                                     (round,)).fetchall()
            why = self.db.execute(
                "SELECT r.status, r.error FROM refusals r JOIN outbox o ON o.key = r.key "
                "WHERE o.round = ? ORDER BY o.key LIMIT 1", (round,)).fetchone()
            if why is not None:
                _set_meta(self.db, f"lost_refusal:{round}", f"{why[0]}: {why[1]}")
            self.db.executemany("DELETE FROM outbox WHERE key = ?", [(k,) for k, _ in queued])
            self.db.executemany("DELETE FROM refusals WHERE key = ?", [(k,) for k, _ in queued])
            n = int(held) + sum(int(s) for _, s in queued)
            _add(self.db, f"lost:{round}", n)
        return n

    def lost_reason(self, round: int) -> str | None:
        """The server's refusal of ``round``'s lost batches (None if it refused none)."""
        return _meta(self.db, f"lost_refusal:{round}")

    def outbox(self) -> list[tuple[str, int, int, bytes]]:
        return [(str(k), int(r), int(s), bytes(b)) for k, r, s, b in self.db.execute(
            "SELECT key, round, senders, body FROM outbox ORDER BY round, key")]

    def outbox_count(self, round: int | None = None) -> int:
        where, args = ("", ()) if round is None else (" WHERE round = ?", (round,))
        return int(self.db.execute("SELECT COUNT(*) FROM outbox" + where, args).fetchone()[0])

    def delivered(self, key: str) -> None:
        """The server took batch ``key``: count its senders as delivered, forget it."""
        with _transaction(self.db):
            row = self.db.execute("SELECT round, senders FROM outbox WHERE key = ?",
                                  (key,)).fetchone()
            if row is None:
                return
            round, senders = int(row[0]), int(row[1])
            self.db.execute("DELETE FROM outbox WHERE key = ?", (key,))
            self.db.execute("DELETE FROM refusals WHERE key = ?", (key,))
            _add(self.db, f"delivered:{round}", senders)
            _set_meta(self.db, f"delivered_batches:{round}",
                      [*_meta(self.db, f"delivered_batches:{round}", []), senders])

    def refused(self, key: str, status: int, error: str) -> None:
        """The server refused batch ``key`` (kept in the outbox, sent again later)."""
        with _transaction(self.db):
            self.db.execute("INSERT INTO refusals VALUES(?, ?, ?) ON CONFLICT(key) DO UPDATE "
                            "SET status = excluded.status, error = excluded.error",
                            (key, int(status), error))

    def refusals(self, round: int | None = None) -> list[tuple[int, int, int, str]]:
        """(round, senders, status, error) of every refused batch still in the outbox."""
        rows = self.db.execute(
            "SELECT o.round, o.senders, r.status, r.error FROM refusals r JOIN outbox o "
            "ON o.key = r.key ORDER BY o.round, o.key").fetchall()
        return [(int(a), int(b), int(c), str(d)) for a, b, c, d in rows
                if round is None or a == round]

    def forwarded_senders(self, round: int) -> int:
        """Senders of ``round`` whose submissions left ``held`` for a batch."""
        return int(_meta(self.db, f"forwarded:{round}", 0))

    def forwarded_batches(self, round: int) -> list[int]:
        """Senders in each batch formed for ``round``, largest first."""
        return sorted((int(n) for n in _meta(self.db, f"batches:{round}", [])), reverse=True)

    def delivered_senders(self, round: int) -> int:
        """Senders of ``round`` in batches the server accepted."""
        return int(_meta(self.db, f"delivered:{round}", 0))

    def delivered_batches(self, round: int) -> list[int]:
        """Senders in each batch of ``round`` the server accepted, largest first."""
        return sorted((int(n) for n in _meta(self.db, f"delivered_batches:{round}", [])),
                      reverse=True)

    def below_threshold(self, round: int) -> int:
        """Senders of ``round`` refused at its close for being fewer than the threshold."""
        return int(_meta(self.db, f"below_threshold:{round}", 0))

    def lost_senders(self, round: int) -> int:
        """Acknowledged senders of ``round`` that never reached the server."""
        return int(_meta(self.db, f"lost:{round}", 0))

    def outcome(self, round: int) -> dict[str, Any] | None:
        row = self.db.execute("SELECT outcome FROM rounds WHERE round = ?", (round,)).fetchone()
        return None if row is None else json.loads(row[0])

    def finish_round(self, round: int, outcome: dict[str, Any], next_round: int) -> None:
        """Record the round's outcome, forget its senders, move on; then truncate the WAL."""
        with _transaction(self.db):
            self.db.execute("INSERT OR REPLACE INTO rounds VALUES(?, ?)",
                            (round, json.dumps(outcome)))
            for table in ("seen", "held", "ids"):
                self.db.execute(f"DELETE FROM {table} WHERE round <= ?", (round,))
            _set_meta(self.db, "round", next_round)
        self.checkpoint()

    def skip_to(self, next_round: int) -> None:
        """The server is past our open round (it was closed without us): count what is
        left of the earlier rounds as lost (:meth:`lose`), move on."""
        rounds = {int(r) for (r,) in self.db.execute(
            "SELECT round FROM held WHERE round < ? UNION SELECT round FROM outbox "
            "WHERE round < ?", (next_round, next_round))}
        for r in sorted(rounds):
            self.lose(r)
        with _transaction(self.db):
            self.db.execute("DELETE FROM seen WHERE round < ?", (next_round,))
            _set_meta(self.db, "round", next_round)
        self.checkpoint()

    def checkpoint(self) -> None:
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close_db(self) -> None:
        self.db.close()
