"""Fixtures of the SDK's tests: a lying server as a real process (liar.py)."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

LIAR = Path(__file__).with_name("liar.py")


class LiarProcess:
    """A running liar.py: ``url``, :meth:`serve` (its replies), :meth:`requests` (what came)."""

    def __init__(self, root: Path) -> None:
        self.script = root / "script.json"
        self.serve({})
        port_file = root / "port"
        self.process = subprocess.Popen([sys.executable, str(LIAR), str(self.script),
                                         str(port_file)], stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while not port_file.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the lying server did not start")
            time.sleep(0.01)
        self.url = f"http://127.0.0.1:{int(port_file.read_text())}"

    def serve(self, routes: dict) -> None:
        """Replace the replies (read by the liar on its next request)."""
        tmp = self.script.with_suffix(".tmp")
        tmp.write_text(json.dumps(routes))
        tmp.replace(self.script)

    def requests(self, method: str | None = None, prefix: str = "") -> list[dict]:
        """Requests received so far (``body`` decoded to bytes)."""
        log = Path(f"{self.script}.log")
        lines = log.read_text().splitlines() if log.exists() else []
        out = []
        for line in lines:
            doc = json.loads(line)
            doc["body"] = base64.b64decode(doc["body"])
            if (method is None or doc["method"] == method) and doc["path"].startswith(prefix):
                out.append(doc)
        return out

    def wait_for(self, prefix: str, timeout: float = 30.0) -> list[dict]:
        """The requests to ``prefix`` once at least one is logged (a streamed reply is
        logged when the liar stops writing)."""
        deadline = time.monotonic() + timeout
        while not (got := self.requests(prefix=prefix)) and time.monotonic() < deadline:
            time.sleep(0.02)
        return got

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


@pytest.fixture
def liar(tmp_path):
    proc = LiarProcess(tmp_path)
    try:
        yield proc
    finally:
        proc.stop()
