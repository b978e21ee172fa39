"""Shared set-up of the secure-sum tests: keys and one round's three roles (imported by the
tests of this folder, which pytest puts on sys.path)."""

from __future__ import annotations

import dataclasses

import numpy as np

from dprec.protocol.secure_sum import SecureSumParams, choose_params
from dprec.protocol.secure_sum.client import SecureSumClient
from dprec.protocol.secure_sum.proxy import SecureSumProxy
from dprec.protocol.secure_sum.sealed import KeyPair
from dprec.protocol.secure_sum.server import SecureSumServer

ROUND = 7


@dataclasses.dataclass
class Deployment:
    params: SecureSumParams
    proxy_keys: KeyPair
    server_keys: KeyPair
    client: SecureSumClient
    server: SecureSumServer

    def proxy(self, threshold: int = 2, seed: int | None = 0) -> SecureSumProxy:
        rng = None if seed is None else np.random.default_rng(seed)
        return SecureSumProxy(self.params, self.proxy_keys, ROUND, threshold, rng,
                              server_key=self.server_keys.public)

    @property
    def run(self) -> bytes:
        """The run id every box of this deployment binds."""
        return self.client.run


def deploy(params: SecureSumParams) -> Deployment:
    proxy_keys, server_keys = KeyPair(), KeyPair()
    return Deployment(params, proxy_keys, server_keys,
                      SecureSumClient(params, proxy_keys.public, server_keys.public),
                      SecureSumServer(params, server_keys))


def small() -> Deployment:
    """d = 5, n <= 20, clip 1, gamma 100 (b = 12: 2-byte elements with 4 spare bits)."""
    return deploy(choose_params(dimension=5, expected_clients=20, clip=1.0, gamma=100.0))


def run_round(dep: Deployment, vectors, threshold: int = 2):
    """Every vector sealed, submitted by its own sender, released, and summed."""
    from dprec.protocol.secure_sum.messages import Release

    proxy = dep.proxy(threshold)
    for i, v in enumerate(vectors):
        proxy.submit(f"user{i}", dep.client.seal(v, ROUND))
    release = Release.from_bytes(proxy.release().to_bytes(), dep.params)
    return dep.server.aggregate(release, ROUND)
