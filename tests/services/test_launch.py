"""The services a launcher starts die with it, however it dies, and leave no secret behind
(issue 21 §4: ``kill -9`` of ``simulate --transport http`` orphaned them)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(e.decode(errors="replace").partition("=")[::2] for e in raw if b"=" in e)


@pytest.mark.slow  # simulate and its services as processes, killed
@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
@pytest.mark.timeout(240)
def test_sigkill_of_simulate_stops_its_services_and_leaves_no_secret(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "DPREC_SERVICES_DIR"}
    cmd = [sys.executable, "-m", "dprec.cli", "simulate", "fmf-ldp", "--transport", "http",
           "--dataset", "synthetic-200x200", "--param", "epochs=500", "--param", "k=2",
           "--param", "shuffle_threshold=5", "--seeds", "1", "--out", str(tmp_path / "out")]
    parent = subprocess.Popen(cmd, env={**env, "TMPDIR": str(tmp)}, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    children: list[int] = []
    try:
        deadline = time.monotonic() + 180
        # both services answer once the run has submitted to the proxy
        while not list(tmp.glob("dprec-services-*/*-proxy/proxy.sqlite3-wal")) \
                or len(_children(parent.pid)) < 2:
            assert parent.poll() is None, "simulate ended early"
            assert time.monotonic() < deadline, "the services did not start"
            time.sleep(0.1)
        children = _children(parent.pid)
        secrets = {v for pid in children for k, v in _environ(pid).items()
                   if k in ("DPREC_SHARED_SECRET", "DPREC_TOKEN_KEY")}
        parent.send_signal(signal.SIGKILL)
        parent.wait(30)
        deadline = time.monotonic() + 30
        while any(_alive(c) for c in children) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [c for c in children if _alive(c)], "services outlived the launcher"
        left = [f for f in tmp.rglob("*") if f.is_file()]
        assert not [f for f in left if f.name in ("shared.secret", "token.key")], left
        for f in left:
            data = f.read_bytes()
            assert not any(s.encode() in data for s in secrets), f"a secret is in {f}"
        assert not list(tmp.glob("dprec-services-*")), "the launcher's folder is left"
    finally:
        if parent.poll() is None:
            parent.kill()
        for c in children:  # the services this test started, if they outlived it
            if _alive(c):
                os.kill(c, signal.SIGKILL)
