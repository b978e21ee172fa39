"""What the proxy forwards: not in arrival order, independent of it, and each server share
alone indistinguishable from uniform."""

from __future__ import annotations

import numpy as np
import scipy.stats
from secure_sum_helpers import ROUND, deploy

from dprec.protocol.secure_sum import choose_params
from dprec.protocol.secure_sum.messages import Upload, associated_data
from dprec.protocol.secure_sum.ring import decode_elements
from dprec.protocol.secure_sum.sealed import open_box

ALPHA = 1e-6
"""Significance of the chi-square tests: a uniform share fails one with probability 1e-6."""


def uploads(dep, count):
    return [dep.client.seal(np.zeros(dep.params.dimension, np.int64), ROUND)
            for _ in range(count)]


def ids_of(dep, data):
    return [Upload.from_bytes(u, dep.params).message_id for u in data]


def test_the_released_order_is_not_the_arrival_order_and_does_not_depend_on_it():
    dep = deploy(choose_params(dimension=3, expected_clients=40, clip=1.0, gamma=1.0))
    data = uploads(dep, 40)
    orders = []
    for arrival in (data, data[::-1]):
        proxy = dep.proxy(seed=5)
        for i, u in enumerate(arrival):
            proxy.submit(f"user{i}", u)
        orders.append([mid for mid, _ in proxy.release().shares])
    assert orders[0] != ids_of(dep, data) and orders[0] != ids_of(dep, data[::-1])
    assert orders[0] == orders[1]  # same proxy randomness, other arrival: same batch
    secure = dep.proxy(seed=None)  # the deployed proxy: OS CSPRNG
    for i, u in enumerate(data):
        secure.submit(f"user{i}", u)
    assert [mid for mid, _ in secure.release().shares] != ids_of(dep, data)  # P(fail) = 1/40!


def test_each_share_alone_is_uniform_on_its_low_byte():
    # every client holds v = 0 (the worst case for a leak); the low byte of s = -r mod 2^16
    # over 150 shares x 64 coordinates = 9,600 draws in 256 bins (37.5 expected per bin)
    dep = deploy(choose_params(dimension=64, expected_clients=20_000, clip=1.0, gamma=1.0))
    assert dep.params.bits == 16
    shares = []
    for u in uploads(dep, 150):
        up = Upload.from_bytes(u, dep.params)
        plain = open_box(dep.server_keys, up.share_box,
                         associated_data(dep.run, ROUND, up.message_id, "server"))
        shares.append(decode_elements(plain, 1, 2, 16)[0])
    low = (np.concatenate(shares) & np.uint64(0xFF)).astype(np.int64)
    assert scipy.stats.chisquare(np.bincount(low, minlength=256)).pvalue > ALPHA
    # the test's power: the plain values (all 0) or a share that leaked v + a small noise
    # would fail it
    leaked = np.random.default_rng(0).integers(-3, 4, low.size) & 0xFF
    assert scipy.stats.chisquare(np.bincount(leaked, minlength=256)).pvalue < ALPHA
