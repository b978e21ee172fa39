"""An unreachable --ray-address is a clear error within seconds (ray.init retried for minutes)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from dprec.distributed.ray_backend import probe_address
from dprec.errors import DprecError


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_probe_refuses_a_closed_port_at_once():
    port = _closed_port()
    start = time.perf_counter()
    with pytest.raises(DprecError, match=rf"no Ray cluster at --ray-address 127.0.0.1:{port}"):
        probe_address(f"127.0.0.1:{port}")
    with pytest.raises(DprecError, match="no Ray cluster"):
        probe_address(f"ray://127.0.0.1:{port}")
    assert time.perf_counter() - start < 10


def test_probe_leaves_other_forms_and_open_ports_to_ray():
    probe_address("auto")
    probe_address("local")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        probe_address(f"127.0.0.1:{s.getsockname()[1]}")


@pytest.mark.slow  # a fresh interpreter waits for Ray to fail
def test_backend_with_a_dead_address_fails_within_30_seconds():
    pytest.importorskip("ray")
    code = ("from dprec.distributed.ray_backend import RayBackend\n"
            f"RayBackend('127.0.0.1:{_closed_port()}', 1).prestart()\n")
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode != 0
    assert "DprecError: no Ray cluster at --ray-address" in proc.stderr
    assert time.perf_counter() - start < 30
