"""Load of the deployed protocol on loopback: client submissions through proxy + server.

For each protocol (``dplcf-sp``, ``fmf-ldp``) and scale (ML-100K's 943 users, and 10K
simulated clients on a MovieLens-like synthetic set with ML-100K's 1,682 items), the same
fit runs twice from the same seed:

- in process (the simulation's :class:`~dprec.protocol.engine.InProcess` path; timed after
  one warm-up fit), and
- through the services: ``dprec serve server`` and ``dprec serve proxy`` started on
  127.0.0.1 by :class:`~dprec.services.launch.Loopback` (their start-up timed apart), the
  simulated clients submitting one request per client and round
  (:class:`~dprec.services.transport.HttpTransport`), the proxy forwarding shuffled
  batches, the server aggregating at each round's close.

Measured: submissions (client messages) per second end to end and, for FMF-LDP, reports
per second (k per submission); p50/p99 latency of one submission as the client sees it; the
HTTP/in-process throughput ratio (same work, same seed; the models are checked equal); the
CPU seconds of the server, the proxy and the simulation (clients + load generator) over
the run; and the DPLCF round with 10K clients (its wall time through running services, and
with the services' start-up) against the 60 s target.

Where the time goes: each per-submission component is timed on its own, in this process,
on the run's own messages (median of ``--repeats``): the client's serialisation
(``to_bytes``) and token, the proxy's decode + validation + strip (``from_bytes``,
``check_upload``) and token check, the proxy's SQLite write (``ProxyStore.hold``, its
default ``synchronous=NORMAL``; and the batch forming per submission), the server's SQLite
write per forwarded batch (``synchronous=FULL``), and one HTTP round trip of a minimal
request on the same kept-alive connection. The breakdown (``breakdown_cpu_us_per_submission``,
CPU microseconds per submission, and each part's share) puts these beside the processes'
measured CPU: the proxy's CPU minus its components is its HTTP stack (uvicorn, FastAPI,
sockets); the simulation's CPU minus the same fit's CPU in process (the protocol's compute:
clients and server), the serialisation and the token is the load generator's HTTP client;
the server process's CPU counts the aggregation a second time (it is in the in-process fit).

Bounded: FMF-LDP runs ``--fmf-epochs`` rounds (default 2; throughput does not depend on the
count). Writes benchmarks/results/services.json (``--out``). Usage:
    python benchmarks/bench_services.py [--scales ml-100k synthetic-10000x1682]
        [--protocols dplcf-sp fmf-ldp] [--fmf-epochs 2] [--concurrency 4]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

import dprec
from dprec.data.registry import load_dataset
from dprec.protocol.messages import Message
from dprec.random import derive_generator
from dprec.services.auth import client_token, same_secret
from dprec.services.launch import Loopback, ServiceProcess
from dprec.services.store import ProxyStore, ServerStore
from dprec.services.transport import HttpTransport
from dprec.systems.deployable import ProtocolInfo, check_upload
from dprec.systems.registry import make_system

SECOND = 1e6  # microseconds


def cpu_seconds(pid: int | None = None) -> float:
    """User + system CPU seconds of process ``pid`` (None: this process, all threads)."""
    if pid is None:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class TimedTransport(HttpTransport):
    """An HttpTransport that records each submission's latency and each round close."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.latencies: list[float] = []
        self.closes: list[float] = []
        self.first: float | None = None
        self.last = 0.0
        self._lock = threading.Lock()

    def connect(self, server: Any, proxy: Any) -> Any:
        srv, prx = super().connect(server, proxy)
        sender = getattr(prx, "submissions", prx.api)  # the submission path in use
        submit, post = sender.submit, prx.admin.post

        def timed_submit(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return submit(*a, **k)
            finally:
                end = time.perf_counter()
                with self._lock:
                    self.latencies.append(end - t)
                    self.first = t if self.first is None else min(self.first, t)
                    self.last = max(self.last, end)

        def timed_post(url: str, *a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return post(url, *a, **k)
            finally:
                if url.endswith("/close"):
                    self.closes.append(time.perf_counter() - t)

        sender.submit = timed_submit
        prx.admin.post = timed_post
        return srv, prx


def fit(system: str, params: dict[str, str], train: Any, transport: Any = None) -> Any:
    model = make_system(system, params)
    model.transport = transport
    return model.fit(train, derive_generator(0, "system", system))


def same_model(a: Any, b: Any) -> bool:
    if hasattr(a, "V") and a.V is not None:
        return bool(np.array_equal(a.V, b.V))
    return bool(a.broadcast == b.broadcast)


def run_http(system: str, params: dict[str, str], train: Any, threshold: int,
             batch_senders: int, concurrency: int) -> dict[str, Any]:
    with Loopback() as lb:
        t0 = time.perf_counter()
        srv = lb.server(system, train.shape[1], params, wait=False)
        prx = lb.proxy(srv.url, threshold, batch_senders, wait=False)
        srv.wait_ready()
        prx.wait_ready()
        startup = time.perf_counter() - t0
        net = TimedTransport(srv.url, prx.url, lb.secret, lb.token_key,
                             concurrency=concurrency, operator_secret=lb.operator_secret)
        procs: dict[str, ServiceProcess] = {"server": srv, "proxy": prx}
        before = {k: cpu_seconds(p.process.pid) for k, p in procs.items()  # type: ignore[union-attr]
                  } | {"simulation": cpu_seconds()}
        t = time.perf_counter()
        try:
            model = fit(system, params, train, net)
        finally:
            net.close()
        wall = time.perf_counter() - t
        after = {k: cpu_seconds(p.process.pid) for k, p in procs.items()  # type: ignore[union-attr]
                 } | {"simulation": cpu_seconds()}
        # a minimal request on a kept-alive connection, for the HTTP floor
        from dprec.client.http import keepalive_client
        with keepalive_client(prx.url) as c:
            rtt = []
            for _ in range(300):
                s = time.perf_counter()
                c.get("/healthz")
                rtt.append(time.perf_counter() - s)
    lat = np.array(net.latencies)
    assert net.remote is not None
    return {
        "model": model, "wall_s": wall, "startup_s": startup,
        "submissions": int(net.remote[1].requests),
        "latency_ms": {"p50": float(np.percentile(lat, 50) * 1e3),
                       "p99": float(np.percentile(lat, 99) * 1e3),
                       "mean": float(lat.mean() * 1e3)},
        "submit_phase_s": (net.last - net.first) if net.first is not None else 0.0,
        "close_s": net.closes,
        "cpu_s": {k: after[k] - before[k] for k in before},
        "healthz_rtt_us": float(np.median(rtt) * SECOND),
    }


def _median_us(fn: Any, n: int, repeats: int) -> float:
    """Median over ``repeats`` of fn()'s time / n, in microseconds."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) / n)
    return statistics.median(times) * SECOND


def components(system: str, params: dict[str, str], train: Any, batch_senders: int,
               repeats: int) -> dict[str, float]:
    """Per-submission cost (microseconds) of each piece of the submission path, timed alone
    on a round's real messages (up to 2,000 clients)."""
    model = make_system(system, params)
    wire: list[tuple[int, bytes, Message]] = []

    # one round's client messages, as the simulation sends them
    from dprec.protocol.engine import Clients

    captured: list[Any] = []

    def hook(clients: Clients, n_users: int) -> Clients:
        class Keep(Clients):
            def step(self, broadcast: Any, round: int, rng: Any) -> Any:
                for m in clients.step(broadcast, round, rng):
                    if round == 0:
                        captured.append(m)
                    yield m

            def sent(self) -> Any:
                return clients.sent()
        return Keep()

    model.clients_hook = hook
    model.fit(train[:2000], derive_generator(0, "system", system))
    info = ProtocolInfo(system, int(train.shape[1]), model.config)
    deployment = info.deployment
    next_id = 0
    for m in captured:  # ids as the HTTP transport numbers them
        sent = list(deployment.client_messages(m, next_id))
        wire.extend((cid, body, m) for cid, body in sent)
        next_id += len(sent)
    n = len(wire)
    key = os.urandom(32)
    bodies = [b for _, b, _ in wire]
    tokens = [client_token(key, cid) for cid, _, _ in wire]

    def serialise() -> None:
        next_id = 0
        for m in captured:
            next_id += sum(1 for _ in deployment.client_messages(m, next_id))

    def decode_check() -> None:
        for b in bodies:
            msg = Message.from_bytes(b)
            check_upload(msg, info)
            deployment.anonymous(msg, b)  # what the proxy holds: the body without the sender

    def tokens_both() -> None:
        for (cid, _, _), tok in zip(wire, tokens, strict=True):
            same_secret(client_token(key, cid).encode(), tok.encode())

    out = {"serialise_to_bytes": _median_us(serialise, n, repeats),
           "decode_validate_strip": _median_us(decode_check, n, repeats),
           "tokens_make_and_check": _median_us(tokens_both, n, repeats)}
    with tempfile.TemporaryDirectory() as tmp:
        held = []
        for r in range(repeats):
            store = ProxyStore(Path(tmp) / f"p{r}.sqlite3", "normal")
            t = time.perf_counter()
            for i, b in enumerate(bodies):
                store.hold(0, i.to_bytes(16, "little"), b)
            held.append((time.perf_counter() - t) / n)
            t = time.perf_counter()
            batches = 0
            while store.held(0):
                store.form_batch(0, batch_senders, lambda rows: b"".join(rows))
                batches += 1
            out.setdefault("_form", []).append((time.perf_counter() - t) / n)  # type: ignore[union-attr]
            store.close_db()
        out["proxy_sqlite_hold"] = statistics.median(held) * SECOND
        out["proxy_sqlite_form_batch"] = statistics.median(out.pop("_form")) * SECOND  # type: ignore[arg-type]
        # the server: one durable write (fsync) per forwarded batch of batch_senders
        store_s = ServerStore(Path(tmp) / "s.sqlite3", "x", "full")
        store_s.start({"input": "bench", "after": None}, None, None)
        body = b"x" * (len(bodies[0]) * batch_senders)
        t = time.perf_counter()
        for i in range(20):
            store_s.accept(f"key-{i:08d}", 0, str(i), batch_senders, body, 1)
        out["server_sqlite_accept_per_submission"] = \
            (time.perf_counter() - t) / (20 * batch_senders) * SECOND
        store_s.close_db()
    out["messages_timed"] = float(n)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scales", nargs="+", default=["ml-100k", "synthetic-10000x1682"])
    ap.add_argument("--protocols", nargs="+", default=["dplcf-sp", "fmf-ldp"])
    ap.add_argument("--fmf-epochs", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=4,
                    help="submissions in flight (the simulation's default)")
    ap.add_argument("--batch-senders", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3, help="component timings")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/services.json"))
    args = ap.parse_args()

    runs = []
    for dname in args.scales:
        ds = load_dataset(dname)
        train = ds.matrix.tocsr()
        for system in args.protocols:
            params = {"epochs": str(args.fmf_epochs)} if system == "fmf-ldp" else {}
            threshold = 100
            fit(system, params, train)  # warm-up: numba caches, imports
            t, c = time.perf_counter(), cpu_seconds()
            here = fit(system, params, train)
            inproc, inproc_cpu = time.perf_counter() - t, cpu_seconds() - c
            http = run_http(system, params, train, threshold, args.batch_senders,
                            args.concurrency)
            subs = http["submissions"]
            k = int(here.config.k) if system == "fmf-ldp" else 1
            comp = components(system, params, train, args.batch_senders, args.repeats)
            per = {kk: v / subs * SECOND for kk, v in http["cpu_s"].items()}
            breakdown = {
                "compute: the protocol in process (clients + server, CPU)":
                    inproc_cpu / subs * SECOND,
                "HTTP: load generator's client side (simulation CPU minus the above)":
                    per["simulation"] - inproc_cpu / subs * SECOND
                    - comp["serialise_to_bytes"] - comp["tokens_make_and_check"] / 2,
                "serialisation: client to_bytes": comp["serialise_to_bytes"],
                "serialisation: proxy from_bytes + validate + strip":
                    comp["decode_validate_strip"],
                "auth: client tokens (HMAC)": comp["tokens_make_and_check"],
                "database: proxy SQLite hold + batch": comp["proxy_sqlite_hold"]
                + comp["proxy_sqlite_form_batch"],
                "database: server SQLite accept (fsync per batch)":
                    comp["server_sqlite_accept_per_submission"],
                "HTTP: proxy's uvicorn/FastAPI/sockets (proxy CPU minus the above)":
                    per["proxy"] - comp["decode_validate_strip"] - comp["proxy_sqlite_hold"]
                    - comp["proxy_sqlite_form_batch"] - comp["tokens_make_and_check"] / 2,
                "server process: HTTP, batch checks, aggregation again (CPU minus its SQLite)":
                    per["server"] - comp["server_sqlite_accept_per_submission"],
            }
            total = sum(breakdown.values())
            run = {
                "protocol": system, "dataset": dname, "users": int(train.shape[0]),
                "items": int(train.shape[1]), "rounds": len(getattr(here, "_rounds", [])) or 1,
                "params": params, "submissions": subs, "reports_per_submission": k,
                "inproc_s": inproc, "inproc_cpu_s": inproc_cpu,
                "inproc_submissions_per_s": subs / inproc,
                "http_s": http["wall_s"], "services_startup_s": http["startup_s"],
                "http_end_to_end_with_startup_s": http["wall_s"] + http["startup_s"],
                "http_submissions_per_s": subs / http["wall_s"],
                "http_reports_per_s": subs * k / http["wall_s"],
                "http_submit_phase_submissions_per_s": subs / max(http["submit_phase_s"], 1e-9),
                "http_over_inproc_throughput": inproc / http["wall_s"],
                "latency_ms": http["latency_ms"],
                "round_close_s": http["close_s"],
                "cpu_s": http["cpu_s"],
                "cpu_us_per_submission": per,
                "healthz_round_trip_us": http["healthz_rtt_us"],
                "components_us_per_submission": comp,
                "breakdown_cpu_us_per_submission": breakdown,
                "breakdown_share": {kk: v / total for kk, v in breakdown.items()},
                "same_model_as_inproc": same_model(here, http["model"]),
                **({"max_abs_V_difference": float(np.abs(here.V - http["model"].V).max())}
                   if system == "fmf-ldp" else {}),
                "http_rounds_updated": [r.updated for r in getattr(http["model"], "_rounds",
                                                                   [])],
            }
            if system.startswith("dplcf") and train.shape[0] >= 10_000:
                run["dplcf_10k_round_target_s"] = 60.0
                run["dplcf_10k_round_meets_target"] = http["wall_s"] < 60.0
            runs.append(run)
            print(f"{system:9s} {dname:22s} {subs:6d} subs  in-proc {inproc:6.2f} s  "
                  f"http {http['wall_s']:6.2f} s (+{http['startup_s']:.1f} s start-up)  "
                  f"{subs / http['wall_s']:7.0f} subs/s  p50 {http['latency_ms']['p50']:.2f}"
                  f" ms  p99 {http['latency_ms']['p99']:.2f} ms  ratio "
                  f"{inproc / http['wall_s']:.4f}  cpu s {http['cpu_s']}  same model "
                  f"{run['same_model_as_inproc']}", flush=True)
    doc = {"benchmark": "services load on loopback (issue 11)",
           "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                       "python": sys.version.split()[0],
                       "load_average_at_end": os.getloadavg()},
           "dprec_version": dprec.__version__, "concurrency": args.concurrency,
           "batch_senders": args.batch_senders, "fmf_epochs": args.fmf_epochs,
           "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2, default=float) + "\n")
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
