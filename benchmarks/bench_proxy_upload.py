"""The proxy's CPU per upload taken (issue 31's 10,000-device round), apart from the clients'
proving: a real ``dprec serve server`` and ``dprec serve proxy`` on loopback
(:class:`~dprec.services.launch.Loopback`) for dp-pop with proofs (d = 1,682, k = 50,
``n_clients`` = 10,000), and ``N`` uploads of the proved size sent over kept-alive
connections (4 at a time), the proxy process's CPU read from ``/proc`` per block of 500.

What the proxy does per upload is all there: the HTTP request, the rate limit, the client
token, the upload's parse and checks, opening its helper box (X25519 + HKDF + AEAD) and
the SQLite write before the 202. The uploads are not proved (a random public share and
leader box around a helper box sealed for real): the proxy checks proofs only at the
close, so proving them would measure the client, not the proxy.

    nice env PYTHONPATH=src .venv/bin/python benchmarks/bench_proxy_upload.py [--uploads 2000]
        [--spacing 0.2]

``--spacing`` s: each sender sleeps that long before each upload (slow clients: the proxy
then also pays for its idle wake-ups). Prints strict JSON; wall-clock and CPU figures on a
shared machine: the load average is printed with them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_secure_sum_http import D, cpu_seconds, peak_rss_mb  # noqa: E402

from dprec.privacy.events import strict_json  # noqa: E402
from dprec.protocol.deployment import generator_to_json  # noqa: E402
from dprec.protocol.secure_sum.messages import run_id  # noqa: E402
from dprec.protocol.secure_sum.proved import ProvedUpload, bound_data  # noqa: E402
from dprec.protocol.secure_sum.sealed import OVERHEAD, seal  # noqa: E402
from dprec.protocol.secure_sum.vdaf.contribution import ContributionCheck  # noqa: E402
from dprec.protocol.secure_sum.wire import SumUpload  # noqa: E402
from dprec.services.auth import client_token  # noqa: E402
from dprec.services.launch import Loopback  # noqa: E402
from dprec.services.transport import Submissions  # noqa: E402
from dprec.systems.deployable import ProtocolInfo  # noqa: E402
from dprec.systems.dp_pop.deploy import check_of  # noqa: E402
from dprec.systems.dp_pop.messages import PopularityModel  # noqa: E402
from dprec.systems.dp_pop.system import DpPopConfig  # noqa: E402

N_CLIENTS, BLOCK = 10_000, 500


def unproved_upload(check: ContributionCheck, proxy_key: bytes, server_key: bytes) -> bytes:
    """A :class:`SumUpload` of the proved size whose helper box opens at the proxy (the
    proxy's whole per-upload path) but whose public share and leader box are random."""
    sizes, mid = check.sizes(), os.urandom(16)
    pub = os.urandom(sizes["public_share"])
    helper = seal(proxy_key, os.urandom(sizes["helper_share"]),
                  bound_data(run_id(proxy_key, server_key), 0, mid, "proxy", pub))
    leader = os.urandom(sizes["leader_share"] + OVERHEAD)
    return SumUpload(ProvedUpload(0, mid, pub, helper, leader).to_bytes()).to_bytes()


def measure(uploads: int, spacing: float) -> dict[str, object]:
    """CPU milliseconds of the proxy process per upload, per block of :data:`BLOCK`."""
    params = {"k": "50", "epsilon": "1.0", "validity": "prio3", "n_clients": str(N_CLIENTS)}
    info = ProtocolInfo("dp-pop", D, DpPopConfig(epsilon=1.0, k=50, n_clients=N_CLIENTS,
                                                 validity="prio3"))
    with Loopback() as lb:
        srv = lb.server("dp-pop", D, params)
        prx = lb.proxy(srv.url, N_CLIENTS, N_CLIENTS)
        r = httpx.post(srv.url + "/v1/start", timeout=60,
                       headers={"Authorization": "Bearer " + lb.secret.decode()},
                       json={"generator": generator_to_json(np.random.default_rng(0))})
        r.raise_for_status()
        server_key = PopularityModel.from_bytes(
            httpx.get(srv.url + "/v1/artefacts/model").content).server_key
        published = httpx.get(prx.url + "/v1/round").json()["published"]
        proxy_key = bytes.fromhex(published["secure_sum_proxy_key"])
        check = check_of(info)
        bodies = [unproved_upload(check, proxy_key, server_key) for _ in range(uploads)]
        sub, pid = Submissions(prx.url), prx.process.pid  # type: ignore[union-attr]

        def send(i: int) -> None:
            if spacing:
                time.sleep(spacing)
            sub.submit(0, i, client_token(lb.token_key, i), bodies[i])

        blocks = []
        with ThreadPoolExecutor(4) as pool:
            for start in range(0, uploads, BLOCK):
                ids = range(start, min(uploads, start + BLOCK))
                cpu, t = cpu_seconds(pid), time.perf_counter()
                list(pool.map(send, ids))
                blocks.append({"uploads": len(ids), "wall_s": time.perf_counter() - t,
                               "proxy_cpu_ms_per_upload": 1e3 * (cpu_seconds(pid) - cpu)
                               / len(ids)})
        sub.close()
        peak = peak_rss_mb(pid)
    per = [b["proxy_cpu_ms_per_upload"] for b in blocks]
    return {"upload_bytes": len(bodies[0]), "blocks": blocks,
            "proxy_cpu_ms_per_upload": {"min": min(per), "median": float(np.median(per)),
                                        "max": max(per)},
            "proxy_peak_rss_mb": peak}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--uploads", type=int, default=2_000)
    ap.add_argument("--spacing", type=float, default=0.0)
    args = ap.parse_args()
    out = {"uploads": args.uploads, "spacing_s": args.spacing,
           "load_average_before": os.getloadavg()}
    out |= measure(args.uploads, args.spacing)
    out["load_average_after"] = os.getloadavg()
    print(json.dumps(strict_json(out), indent=1))


if __name__ == "__main__":
    main()
