"""dp-pop's secure-sum round over the HTTP services, end to end (issue 23 §3 target: 10K
clients, d = 1,682, one round in <= 5 minutes on this 2-core machine; issue 31 with proofs:
<= 10 minutes, proxy peak <= 2 GB).

``N`` simulated clients (a MovieLens-like synthetic set with ML-100K's 1,682 items), one
round: ``dprec serve server`` and ``dprec serve proxy`` on loopback
(:class:`~dprec.services.launch.Loopback`), each client uploading ONE sealed secure-sum
upload (its k-hot vector plus its Skellam share, split into a mask seed sealed to the proxy
and a share sealed to the server), the proxy releasing one shuffled batch with the mask
sum, the server opening, summing and ranking. The clients draw as devices (each its share
and sample from its own CSPRNG, issue 31), so the HTTP counts are not the seeded in-process
ones; checked: every upload was summed, and the counts differ from the in-process ones by
no more than the two runs' noise allows (6 standard deviations of the difference).

Measured: wall time of the round (and of the services' start-up apart), bytes per client
(upload; the release's share per client; plain k-hot report), uploads (shares) per second
end to end, and the CPU split: the simulation process (client noise + encryption + the HTTP
load generator), the client encryption alone (sealing every upload once more, timed in this
process), the proxy process and the server process.

Beside it, the same services carrying a plain report of the same size class per client:
one FMF-LDP epoch with k reports per client (k item-factor ids and bits, what a plain k-hot
report of k item ids costs on the wire, 4 bytes per id), through the same proxy and server.

    .venv/bin/python benchmarks/bench_secure_sum_http.py            # N = 1,000
    .venv/bin/python benchmarks/bench_secure_sum_http.py --large --no-plain  # N = 10,000
    .venv/bin/python benchmarks/bench_secure_sum_http.py --validity none

``--validity prio3`` (dp-pop's default): every upload carries its Prio3 proof (k-hot plus
truncated noise), verified jointly by the proxy and the server at the close (issue 31 §1),
a chunk at a time. Reported with it: the peak resident memory (VmHWM) of the proxy and the
server processes, and the round's phases: ``upload_s`` (the clients drawing, proving,
sealing and uploading; the requests overlap the proving) and ``close_s`` (the operator's
close: the proxy and the server checking every upload, the release, the server's sum).

Prints strict JSON (and writes it to ``--out``). Wall-clock numbers on a shared 2-core
machine: the load average is printed with them (before, sampled every 10 s during the
proved round: min/mean/max, and after).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from dprec.data.registry import load_dataset
from dprec.privacy.events import strict_json
from dprec.protocol.messages import HEADER
from dprec.protocol.secure_sum.client import SecureSumClient
from dprec.protocol.secure_sum.messages import MESSAGE_ID_BYTES, Upload
from dprec.protocol.secure_sum.params import choose_params
from dprec.protocol.secure_sum.proved import ProvedBatch, ProvedUpload
from dprec.protocol.secure_sum.sealed import OVERHEAD, KeyPair
from dprec.services.launch import Loopback
from dprec.services.transport import HttpTransport
from dprec.systems.dp_pop.calibration import calibrate, contribution_check
from dprec.systems.dp_pop.system import DpPopConfig
from dprec.systems.registry import make_system

D = 1_682


def cpu_seconds(pid: int | None = None) -> float:
    """User + system CPU seconds of process ``pid`` (None: this process, all threads)."""
    if pid is None:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class LoadWatch:
    """The 1-minute load average sampled every ``every`` seconds while it runs (a thread):
    what the machine's other work was doing during a wall-clock measurement."""

    def __init__(self, every: float = 10.0) -> None:
        self.every = every
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="load-watch", daemon=True)

    def _run(self) -> None:
        while True:
            self.samples.append(os.getloadavg()[0])
            if self._stop.wait(self.every):
                return

    def __enter__(self) -> LoadWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict[str, float]:
        """min, mean and max of the samples, and how many."""
        s = self.samples or [float("nan")]
        return {"min": min(s), "mean": sum(s) / len(s), "max": max(s), "samples": len(s)}


def fit(system: str, params: dict[str, str], train: Any, transport: Any = None) -> Any:
    model = make_system(system, params)
    model.transport = transport
    return model.fit(train, np.random.default_rng(0))


def peak_rss_mb(pid: int) -> float:
    """Peak resident set (VmHWM) of process ``pid`` in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run_http(system: str, params: dict[str, str], server_params: dict[str, str], train: Any,
             threshold: int, concurrency: int) -> dict[str, Any]:
    """One fit through freshly started services; wall time, CPU per process."""
    with Loopback() as lb:
        t0 = time.perf_counter()
        srv = lb.server(system, train.shape[1], server_params, wait=False)
        prx = lb.proxy(srv.url, threshold, max(1000, threshold), wait=False)
        srv.wait_ready()
        prx.wait_ready()
        startup = time.perf_counter() - t0
        net = HttpTransport(srv.url, prx.url, lb.secret, lb.token_key, concurrency=concurrency,
                            operator_secret=lb.operator_secret)
        pids = {"server": srv.process.pid, "proxy": prx.process.pid}  # type: ignore[union-attr]
        before = {k: cpu_seconds(p) for k, p in pids.items()} | {"simulation": cpu_seconds()}
        t = time.perf_counter()
        closes: list[tuple[float, float, dict[str, float]]] = []
        post = httpx.Client.post

        def timed_post(client: httpx.Client, url: Any, *a: Any, **k: Any) -> Any:
            if not str(url).endswith("/close"):
                return post(client, url, *a, **k)
            start, cpu = time.perf_counter(), {n: cpu_seconds(p) for n, p in pids.items()}
            try:
                return post(client, url, *a, **k)
            finally:
                closes.append((start, time.perf_counter(), {
                    n: cpu_seconds(p) - cpu[n] for n, p in pids.items()}))

        httpx.Client.post = timed_post  # type: ignore[method-assign]
        try:
            model = fit(system, params, train, net)
        finally:
            httpx.Client.post = post  # type: ignore[method-assign]
            net.close()
        wall = time.perf_counter() - t
        after = {k: cpu_seconds(p) for k, p in pids.items()} | {"simulation": cpu_seconds()}
        peak = {k: peak_rss_mb(p) for k, p in pids.items()}
        assert net.remote is not None
        requests = int(net.remote[1].requests)
    phases: dict[str, Any] = {}
    if closes:
        first, last = closes[0], closes[-1]
        phases = {"upload_s": first[0] - t, "close_s": last[1] - first[0],
                  "close_cpu_s": {n: sum(c[2][n] for c in closes) for n in pids},
                  "closes": len(closes)}
    return {"model": model, "wall_s": wall, "startup_s": startup, "requests": requests,
            "cpu_s": {k: after[k] - before[k] for k in before}, "peak_rss_mb": peak,
            "phases": phases}


def encryption_cpu(params: Any, n: int, rng: np.random.Generator) -> dict[str, float]:
    """CPU seconds to seal ``n`` uploads of noisy k-hot-sized vectors (this process)."""
    client = SecureSumClient(params, KeyPair().public, KeyPair().public)
    v = rng.integers(-20, 21, size=(min(n, 500), params.dimension))
    start = time.process_time()
    for i in range(n):
        client.seal(v[i % v.shape[0]], 0)
    spent = time.process_time() - start
    return {"seconds": spent, "ms_per_client": 1e3 * spent / n}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=1_000)
    ap.add_argument("--large", action="store_true", help="N = 10,000 (the issue's target)")
    ap.add_argument("--k", type=int, default=50)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--no-plain", action="store_true", help="skip the plain-report round")
    ap.add_argument("--validity", choices=("none", "prio3"), default="prio3",
                    help="prio3 (the default): every upload carries its validity proof")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    n = 10_000 if args.large else int(args.clients)
    load = os.getloadavg()
    train = load_dataset(f"synthetic-{n}x{D}").matrix.tocsr()
    n, d = train.shape
    params = {"k": str(args.k), "epsilon": repr(args.epsilon), "validity": args.validity}
    config = DpPopConfig(epsilon=args.epsilon, k=args.k, validity=args.validity)
    cal = calibrate(config, d, n)
    check = contribution_check(config, d, n)

    here_t = time.perf_counter()
    here = fit("dp-pop", params, train)
    here_s = time.perf_counter() - here_t
    with LoadWatch() as watch:
        secure = run_http("dp-pop", params, {**params, "n_clients": str(n)}, train, n,
                          args.concurrency)
    summed = int(secure["model"].diagnostics()["contributors"]) == n
    spread = 6 * math.sqrt(2 * 2 * cal.share.mu * n)  # two independent Sk(mu_share n) sums
    close = bool(np.abs(here.noisy_counts - secure["model"].noisy_counts).max() <= spread)
    p = cal.params
    upload_bytes = HEADER.size + Upload.size(p)
    release_per_client = check_per_client = 16 + p.share_bytes + OVERHEAD
    if check is not None:
        upload_bytes = HEADER.size + ProvedUpload.size(check)
        release_per_client = MESSAGE_ID_BYTES  # plus 8 d for the aggregate share
        check_per_client = sum(ProvedBatch.item_sizes(check))
    enc = encryption_cpu(p, min(n, 2_000), np.random.default_rng(1))
    wall = secure["wall_s"]
    out: dict[str, Any] = {
        "clients": n, "items": d, "k": args.k, "epsilon": args.epsilon,
        "load_average_before": load,
        "load_average_during_round": watch.summary(),
        "secure_sum": {
            "q_bits": p.bits, "m": p.shares, "gamma": p.gamma, "sigma": p.sigma,
            "element_bytes": p.element_bytes,
            "http_summed_every_upload": summed,
            "http_within_noise_of_in_process": close,
            "round_wall_s": wall, "services_startup_s": secure["startup_s"],
            "in_process_round_s": here_s,
            "requests": secure["requests"],
            "uploads_per_second": n / wall,
            "bytes_per_client": {"upload": upload_bytes,
                                 "share_check_per_client": check_per_client,
                                 "release_share_per_client": release_per_client,
                                 "plain_k_hot_report": HEADER.size + 4 * args.k},
            "cpu_s": secure["cpu_s"],
            "cpu_ms_per_client": {k: 1e3 * v / n for k, v in secure["cpu_s"].items()},
            "peak_rss_mb": secure["peak_rss_mb"],
            "phases": secure["phases"],
            "validity": args.validity,
            "client_encryption": enc,
        },
        "projection_75k_users_10k_items": _projection(cal),
    }
    if not args.no_plain:
        out["plain_reports"] = plain_round(train, args.k, args.concurrency)
    out["load_average_after"] = os.getloadavg()
    text = json.dumps(strict_json(out), indent=1)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")


def plain_round(train: Any, k: int, concurrency: int) -> dict[str, Any]:
    """One FMF-LDP epoch of ``k`` plain reports per client through the same services."""
    n = train.shape[0]
    fmf = {"epochs": "1", "k": str(k), "factors": "2", "shuffle_threshold": str(min(n, 1000))}
    plain = run_http("fmf-ldp", fmf, fmf, train, min(n, 1000), concurrency)
    return {
        "what": f"one FMF-LDP epoch, k = {k} reports per client (4-byte item-factor ids and "
                "bits: the wire size of a plain k-hot report), same services",
        "round_wall_s": plain["wall_s"], "requests": plain["requests"],
        "uploads_per_second": n / plain["wall_s"],
        "bytes_per_client": HEADER.size + 12 + 4 * k + (k + 7) // 8,
        "cpu_s": plain["cpu_s"],
        "cpu_ms_per_client": {name: 1e3 * v / n for name, v in plain["cpu_s"].items()},
    }


def _projection(cal: Any) -> dict[str, Any]:
    """Bytes per client and the modulus at 75K users x 10K items (same k, epsilon, noise
    per client)."""
    users, items = 75_000, 10_000
    share_var = cal.share.variance
    p = choose_params(dimension=items, expected_clients=users, clip=1.0, gamma=1.0,
                      norm="linf", noise_variance=share_var * users)
    return {"users": users, "items": items, "q_bits": p.bits,
            "upload_bytes_per_client": HEADER.size + Upload.size(p),
            "round_upload_bytes": users * (HEADER.size + Upload.size(p)),
            "note": "the per-client share variance of this run; the modulus grows with "
                    "log2 of the users and the noise tail; one upload of d ceil(b/8) + 178 "
                    "bytes per client"}


if __name__ == "__main__":
    main()
