"""What a device sent, per protocol run: the run it is pinned to and every message, on disk.

A run is named by the SHA-256 of the server's protocol description
(:meth:`~dprec.systems.deployable.ProtocolInfo.fingerprint`: system, N, rounds, aggregator and
config). The device pins the run it first meets (``run.json``). A server that later describes
another run (another config, another system) is refused with
:class:`~dprec.client.errors.RunChanged` until the user joins it
(:meth:`~dprec.client.device.DeviceClient.join_new_run`); the ledger keeps every charge.

A report's ledger key is (run, round) of what the device itself sent (:func:`report_key`),
never the server's word alone. Its message is written (atomically, fsynced) before it is
charged and before it is sent, as ``sent/<run>-<round>.msg``, and kept: a server that asks for
a round again (restarted with empty state, redeployed, or hostile) gets those bytes again, bit
for bit, never new noise.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from dprec.client.errors import RunChanged
from dprec.client.ledger import atomic_write, private_dir
from dprec.errors import DprecError
from dprec.systems.deployable import ProtocolInfo

__all__ = ["SentMessages", "report_key", "run_id"]

_FORMAT = 1


def run_id(info: ProtocolInfo) -> str:
    """The run's identity: SHA-256 (hex) of the canonical description."""
    return hashlib.sha256(info.fingerprint().encode()).hexdigest()


def report_key(run: str, round: int) -> str:
    """The ledger key of the message sent in ``round`` of ``run``."""
    return f"{run}/round-{int(round)}"


class SentMessages:
    """The pinned run (``run.json``) and the messages sent (``sent/``) in ``state_dir``."""

    def __init__(self, state_dir: Path | str) -> None:
        self.root = Path(state_dir)
        self.pin_path = self.root / "run.json"
        self.sent_dir = self.root / "sent"
        private_dir(self.root)
        private_dir(self.sent_dir)

    def pinned(self) -> str | None:
        """The pinned run, or None before the first report."""
        if not self.pin_path.exists():
            return None
        try:
            doc: Any = json.loads(self.pin_path.read_text())
            run = doc["run"]
            if doc.get("format") != _FORMAT or not isinstance(run, str) or len(run) != 64:
                raise ValueError("unknown format")
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise DprecError(f"the pinned run at {self.pin_path} is unreadable ({e}); refusing "
                             "to guess which run this device reported to") from None
        return run

    def check(self, info: ProtocolInfo) -> str:
        """The run of ``info``, pinned if nothing is; :class:`RunChanged` if another is."""
        run = run_id(info)
        pinned = self.pinned()
        if pinned is None:
            self.pin(info)
        elif pinned != run:
            raise RunChanged(f"the server now describes run {run[:16]}... ({info.system}, "
                             f"{info.n_items} items), but this device is pinned to run "
                             f"{pinned[:16]}...; it reports to another run only after "
                             "join_new_run() (every report there is charged anew)")
        return run

    def pin(self, info: ProtocolInfo) -> str:
        """Pin ``info``'s run (replacing any pinned one)."""
        run = run_id(info)
        doc = {"format": _FORMAT, "run": run, "description": info.to_json()}
        atomic_write(self.pin_path, json.dumps(doc, indent=1, sort_keys=True).encode())
        return run

    def _path(self, run: str, round: int) -> Path:
        return self.sent_dir / f"{run}-{int(round)}.msg"

    def message(self, run: str, round: int) -> bytes | None:
        """The message stored for ``round`` of ``run``, or None."""
        path = self._path(run, round)
        return path.read_bytes() if path.exists() else None

    def store(self, run: str, round: int, body: bytes) -> None:
        """Keep ``body`` as the message of ``round`` of ``run`` (atomic, durable; once)."""
        path = self._path(run, round)
        if path.exists():
            raise DprecError(f"a message for round {round} of run {run[:16]}... is stored "
                             "already; it is never replaced")
        atomic_write(path, body)
