"""The cost of the secure sum (issue 23 §1) against plain k-hot reports of the same vectors.

For ``d = 1,682`` (ML-100K items) and ``n`` clients, each holding a k-hot vector: bytes per
client upload, client milliseconds (clip + quantise + noise + split + seal), proxy
milliseconds per client (parse, open the seed, expand the mask, add; the release's shuffle
included), server milliseconds per client (open, decode, sum, lift). Beside it: the plain
k-hot report (the k item ids as uint16) and its sum (one bincount). Then one round at
``d = 10,000`` on a few hundred clients, projected linearly to 75K users x 10K items.

    .venv/bin/python benchmarks/secure_sum_cost.py [--clients 1000 10000] [--k 10]

Prints strict JSON. Wall-clock numbers on a shared 2-core machine: read them as orders of
magnitude.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from dprec.privacy.events import strict_json
from dprec.protocol.secure_sum import choose_params
from dprec.protocol.secure_sum.client import SecureSumClient
from dprec.protocol.secure_sum.messages import Release
from dprec.protocol.secure_sum.proxy import SecureSumProxy
from dprec.protocol.secure_sum.sealed import KeyPair
from dprec.protocol.secure_sum.server import SecureSumServer

ROUND = 1
USERS = 75_000
CENTRAL_STD = 20.0
"""Standard deviation of the summed Skellam noise per item (sets the noise tail and b)."""


def k_hot(rng: np.random.Generator, n: int, d: int, k: int) -> np.ndarray:
    """``n`` users' item ids, ``k`` distinct items each (``(n, k)`` int)."""
    return np.argsort(rng.random((n, d)), axis=1)[:, :k]


def one_round(n: int, d: int, k: int, seed: int = 0, expected: int = 0) -> dict[str, object]:
    """One round of ``n`` clients, parameters chosen for ``max(n, expected)`` of them."""
    rng = np.random.default_rng(seed)
    params = choose_params(dimension=d, expected_clients=max(n, expected), clip=1.0,
                           gamma=1.0, noise_variance=CENTRAL_STD ** 2)
    mu = CENTRAL_STD ** 2 / (2 * n)  # each client's Skellam(mu, mu): n shares sum to the std

    def noise(dim, g):
        return g.poisson(mu, dim) - g.poisson(mu, dim)

    proxy_keys, server_keys = KeyPair(), KeyPair()
    client = SecureSumClient(params, proxy_keys.public, server_keys.public)
    proxy = SecureSumProxy(params, proxy_keys, ROUND, threshold=min(n, 100),
                           server_key=server_keys.public)
    server = SecureSumServer(params, server_keys)
    items = k_hot(rng, n, d, k)
    dense = np.zeros((n, d))
    np.put_along_axis(dense, items, 1.0, axis=1)

    start = time.perf_counter()
    uploads, vectors = [], []
    for x in dense:
        v = client.prepare(x, rng, noise)
        vectors.append(v)
        uploads.append(client.seal(v, ROUND))
    client_s = time.perf_counter() - start

    start = time.perf_counter()
    for i, u in enumerate(uploads):
        proxy.submit(f"user{i}", u)
    release = proxy.release()
    proxy_s = time.perf_counter() - start
    wire = release.to_bytes()

    start = time.perf_counter()
    result = server.aggregate(Release.from_bytes(wire, params), ROUND)
    server_s = time.perf_counter() - start
    assert np.array_equal(result.integer_sum, np.sum(vectors, axis=0)), "secure sum is wrong"

    reports = [row.astype(np.uint16).tobytes() for row in items]
    start = time.perf_counter()
    ids = np.concatenate([np.frombuffer(r, dtype=np.uint16) for r in reports])
    plain = np.bincount(ids, minlength=d)
    plain_s = time.perf_counter() - start
    assert np.array_equal(plain, dense.sum(axis=0))

    return {
        "clients": n, "dimension": d, "k": k, "params": params.to_json(),
        "secure": {
            "upload_bytes_per_client": len(uploads[0]),
            "release_bytes": len(wire),
            "client_ms_per_client": 1e3 * client_s / n,
            "proxy_ms_per_client": 1e3 * proxy_s / n,
            "server_ms_per_client": 1e3 * server_s / n,
            "round_s": client_s + proxy_s + server_s,
        },
        "plain_k_hot": {
            "report_bytes_per_client": len(reports[0]),
            "server_ms_per_client": 1e3 * plain_s / n,
        },
        "bytes_ratio": len(uploads[0]) / len(reports[0]),
    }


def projection(at_10k: dict[str, object], users: int = USERS, k: int = 10
               ) -> dict[str, object]:
    """Per-client costs measured at ``d = 10,000`` with the parameters of ``users`` clients
    (a few hundred of them run), the totals scaled linearly in users."""
    per = at_10k["secure"]
    upload = per["upload_bytes_per_client"]
    items = at_10k["dimension"]
    return {
        "users": users, "items": items, "bits": at_10k["params"]["bits"],
        "element_bytes": at_10k["params"]["element_bytes"],
        "upload_bytes_per_client": upload,
        "total_upload_gb": upload * users / 1e9,
        "proxy_held_gb": (upload - 116) * users / 1e9,
        "client_ms_per_client": per["client_ms_per_client"],
        "proxy_cpu_s": per["proxy_ms_per_client"] * users / 1e3,
        "server_cpu_s": per["server_ms_per_client"] * users / 1e3,
        "plain_report_bytes_per_client": 2 * k,
        "method": (f"per-client costs measured at d = {items} on {at_10k['clients']} clients "
                   f"with the parameters of {users} (b = {at_10k['params']['bits']}); totals = "
                   f"per-client x {users} users (linear: each upload is opened and added "
                   "once); proxy_held_gb: the share boxes the proxy holds until the release"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, nargs="+", default=[1000, 10_000])
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--projection-clients", type=int, default=300)
    args = ap.parse_args()
    rounds = [one_round(n, 1682, args.k) for n in args.clients]
    at_10k = one_round(args.projection_clients, 10_000, args.k, seed=1, expected=USERS)
    out = {"rounds": rounds, "at_10k_items": at_10k, "projection_75k_x_10k": projection(at_10k)}
    print(json.dumps(strict_json(out), indent=2, allow_nan=False))


if __name__ == "__main__":
    main()
