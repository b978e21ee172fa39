"""Start the services as processes on loopback (``dprec simulate --transport http``, tests).

:class:`Loopback` draws a fresh shared secret and token key, kept in memory and handed to the
services in their environment (never written to disk), and starts ``dprec serve server`` /
``dprec serve proxy`` as subprocesses on free ports (bound by the services themselves:
``--port 0 --port-file``), waits until they answer, and stops every process it started when
it exits (also on errors). The services die with the launcher however it dies (SIGKILL
included): each holds a pipe from it on stdin and stops at its end of file
(:data:`~dprec.services.EXIT_WITH_PARENT`), and then removes its state from a temporary
folder the launcher made (the last one removes the folder). A :class:`ServiceProcess` can be
killed (SIGKILL) and restarted on the same port and state, for the crash tests.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

import httpx

from dprec.errors import DprecError
from dprec.protocol.engine import Proxy, Server
from dprec.protocol.shuffler import DEFAULT_THRESHOLD
from dprec.services import EXIT_WITH_PARENT
from dprec.services.transport import HttpTransport
from dprec.systems.deployable import serving_of

__all__ = ["Loopback", "LoopbackTransport", "ServiceProcess", "write_key"]


def write_key(path: Path, nbytes: int = 32) -> Path:
    """A new random key as hex in ``path`` (created with mode 0600; never overwritten)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(nbytes) + "\n")
    return path


class ServiceProcess:
    """One service process: ``dprec serve KIND ARGS`` with its own state folder and log."""

    def __init__(self, kind: str, args: Sequence[str], state_dir: Path,
                 env: Mapping[str, str] | None = None) -> None:
        self.kind = kind
        self.args = list(args)
        self.env = dict(env or {})
        """Added to the service's environment (the launcher's secrets)."""
        self.state_dir = state_dir
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = state_dir / f"{kind}.log"
        self.port: int | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def url(self) -> str:
        if self.port is None:
            raise DprecError(f"the {self.kind} has not started")
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 90.0, wait: bool = True) -> ServiceProcess:
        """Start (or restart on the same port); with ``wait``, until ``/healthz`` answers,
        else only until the port is known (the service binds it before its imports)."""
        port_file = self.state_dir / "port"
        if self.port is None:
            port_file.unlink(missing_ok=True)
            where = ["--port", "0", "--port-file", str(port_file)]
        else:
            where = ["--port", str(self.port)]
        cmd = [sys.executable, "-m", "dprec.cli", "serve", self.kind, *self.args,
               "--host", "127.0.0.1", *where]
        env = {**os.environ, EXIT_WITH_PARENT: "1", **self.env}
        with open(self.log_path, "ab") as log:
            # stdin: a pipe this process never writes to; the service stops at its end
            self.process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.PIPE, env=env)
        self.starts += 1
        deadline = time.monotonic() + timeout
        while self.port is None and time.monotonic() < deadline:
            self._check_alive()
            if port_file.exists():
                text = port_file.read_text().strip()
                self.port = int(text) if text.isdigit() else None
            time.sleep(0.02)
        if self.port is None:
            self.stop()
            raise DprecError(f"the {self.kind} did not bind a port within {timeout:.0f} s: "
                             f"{self.log_tail()}")
        return self.wait_ready(deadline - time.monotonic()) if wait else self

    def _check_alive(self) -> None:
        assert self.process is not None
        if self.process.poll() is not None:
            raise DprecError(f"the {self.kind} exited with {self.process.returncode}: "
                             f"{self.log_tail()}")

    def wait_ready(self, timeout: float = 90.0) -> ServiceProcess:
        """Wait until ``/healthz`` answers 200."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            try:
                if httpx.get(self.url + "/healthz", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        self.stop()
        raise DprecError(f"the {self.kind} did not answer within {timeout:.0f} s: "
                         f"{self.log_tail()}")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` and wait for the process to end."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)
            self.process.wait(timeout=30)
        self._close_pipe()

    def _close_pipe(self) -> None:
        if self.process is not None and self.process.stdin is not None:
            try:
                self.process.stdin.close()
            except OSError:
                pass

    def stop(self) -> None:
        """Terminate (then kill) the process if it runs."""
        if self.process is None or self.process.poll() is not None:
            self._close_pipe()
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self._close_pipe()

    def log_tail(self, n: int = 2000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""


class Loopback:
    """Services on 127.0.0.1 with fresh keys, all stopped on exit.

    With no ``root``, the services' state goes to a new temporary folder, removed on exit
    (and by the services themselves if this process dies first)."""

    def __init__(self, root: Path | None = None) -> None:
        self._tmp = None if root is not None else tempfile.mkdtemp(prefix="dprec-services-")
        self.root = Path(root if root is not None else self._tmp)  # type: ignore[arg-type]
        self.root.mkdir(parents=True, exist_ok=True)
        self.secret = secrets.token_hex(32).encode()
        """The proxy-server shared secret (the server's operator's too)."""
        self.operator_secret = secrets.token_hex(32).encode()
        """The proxy's operator secret (closing rounds there; the server never holds it)."""
        self.token_key = secrets.token_hex(32).encode()
        """The key of the clients' tokens."""
        self.env = {"DPREC_SHARED_SECRET": self.secret.decode(),
                    "DPREC_OPERATOR_SECRET": self.operator_secret.decode(),
                    "DPREC_TOKEN_KEY": self.token_key.decode(),
                    EXIT_WITH_PARENT: str(self.root) if self._tmp is not None else "1"}
        self.processes: list[ServiceProcess] = []
        self._n = 0

    def _dir(self, kind: str) -> Path:
        self._n += 1
        return self.root / f"{self._n:03d}-{kind}"

    def server(self, protocol: str, n_items: int, params: Mapping[str, str] | None = None,
               config: Path | None = None, aggregator: str = "mean",
               extra: Sequence[str] = (), wait: bool = True) -> ServiceProcess:
        state = self._dir("server")
        args = ["--protocol", protocol, "--n-items", str(n_items), "--state", str(state),
                "--aggregator", aggregator]
        for k, v in (params or {}).items():
            args += ["--param", f"{k}={v}"]
        if config is not None:
            args += ["--config", str(config)]
        p = ServiceProcess("server", [*args, *extra], state, self.env)
        self.processes.append(p)
        return p.start(wait=wait)

    def proxy(self, server_url: str, threshold: int, batch_senders: int = 1000,
              extra: Sequence[str] = (), wait: bool = True) -> ServiceProcess:
        state = self._dir("proxy")
        args = ["--server", server_url, "--state", str(state),
                "--threshold", str(threshold), "--batch-senders", str(batch_senders)]
        p = ServiceProcess("proxy", [*args, *extra], state, self.env)
        self.processes.append(p)
        return p.start(wait=wait)

    def stop(self) -> None:
        for p in self.processes:
            p.stop()

    def __enter__(self) -> Loopback:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)


class LoopbackTransport(HttpTransport):
    """An :class:`~dprec.services.transport.HttpTransport` that starts a fresh server and
    proxy on loopback for every protocol run (every seed and fold of an experiment).

    The server gets the simulated system's name and parameters, and what its server half
    reads off the simulation's role (:meth:`~dprec.protocol.deployment.Serving.service_params`),
    so it builds the same configuration; the proxy's threshold is the simulated proxy's (FMF-LDP's
    ``shuffle_threshold``; 100 for DPLCF, which has none in process) unless given, and
    its batches hold ``batch_senders`` senders (default: 1000, or the threshold if more).
    """

    def __init__(self, loopback: Loopback, protocol: str, params: Mapping[str, str],
                 config: Path | None = None, threshold: int | None = None,
                 batch_senders: int | None = None) -> None:
        super().__init__("", "", loopback.secret, loopback.token_key,
                         operator_secret=loopback.operator_secret)
        self.loopback = loopback
        self.protocol = protocol
        self.params = dict(params)
        self.config = config
        self.threshold = threshold
        self.batch_senders = batch_senders
        self.pair: tuple[ServiceProcess, ServiceProcess] | None = None

    def connect(self, server: Server, proxy: Proxy) -> tuple[Server, Proxy]:
        if self.pair is not None:
            for p in self.pair:
                p.stop()
        serving = serving_of(server)
        params = {**self.params, **(serving.service_params(server) if serving else {})}
        srv = self.loopback.server(self.protocol, int(server.n_items),  # type: ignore[attr-defined]
                                   params, self.config, wait=False)
        threshold = self.threshold or int(getattr(proxy, "threshold", DEFAULT_THRESHOLD))
        batch = self.batch_senders if self.batch_senders is not None else max(1000, threshold)
        prx = self.loopback.proxy(srv.url, threshold, batch, wait=False)
        srv.wait_ready()
        prx.wait_ready()
        self.pair = (srv, prx)
        self.server_url, self.proxy_url = srv.url, prx.url
        return super().connect(server, proxy)
