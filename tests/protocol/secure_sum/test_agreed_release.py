"""The agreed release (issue 31 §2): the server's verdict per share, the intersection with the
proxy's, the release rule, the release over exactly the agreed set, and a count checked
before any share is opened."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from secure_sum_helpers import ROUND, small

import dprec.protocol.secure_sum.server as server_module
from dprec.errors import DprecError
from dprec.protocol.secure_sum.errors import (
    BelowThresholdError,
    OversizedUploadError,
    ReplayError,
)
from dprec.protocol.secure_sum.messages import (
    MESSAGE_ID_BYTES,
    Release,
    ShareBatch,
    Upload,
    associated_data,
)
from dprec.protocol.secure_sum.ring import encode_elements
from dprec.protocol.secure_sum.sealed import KeyPair, seal
from dprec.protocol.secure_sum.validity import ReleaseRule, ShareCheck, agree


def _round(dep, n, rng_seed=0):
    rng = np.random.default_rng(rng_seed)
    vectors = rng.integers(-50, 51, (n, dep.params.dimension))
    proxy = dep.proxy()
    for i, v in enumerate(vectors):
        proxy.submit(f"u{i}", dep.client.seal(v, ROUND))
    return proxy, vectors


def _replace_share(batch: ShareBatch, i: int, box: bytes) -> ShareBatch:
    shares = list(batch.shares)
    shares[i] = (shares[i][0], box)
    return dataclasses.replace(batch, shares=tuple(shares))


def test_the_server_gives_a_verdict_per_share_and_sums_nothing():
    dep = small()
    proxy, _ = _round(dep, 6)
    batch = ShareBatch.from_bytes(proxy.share_batch().to_bytes(), dep.params)
    ids = [mid for mid, _ in batch.shares]
    p = dep.params
    batch = _replace_share(batch, 0, seal(KeyPair().public, bytes(p.share_bytes),
                                          associated_data(dep.run, ROUND, ids[0], "server")))
    tampered = bytearray(batch.shares[1][1])
    tampered[-1] ^= 1
    batch = _replace_share(batch, 1, bytes(tampered))
    batch = _replace_share(batch, 2, seal(dep.server_keys.public, bytes(p.share_bytes - 1),
                                          associated_data(dep.run, ROUND, ids[2], "server")))
    big = np.full(p.dimension, p.modulus, np.uint64)  # >= q, still 2 bytes on the wire
    batch = _replace_share(batch, 3, seal(dep.server_keys.public,
                                          encode_elements(big, p.element_bytes),
                                          associated_data(dep.run, ROUND, ids[3], "server")))
    verdicts = dep.server.check(batch, ROUND)
    assert "WrongRecipientError" in verdicts[ids[0]]
    assert "TamperedCiphertextError" in verdicts[ids[1]]
    assert f"{p.share_bytes} bytes" in verdicts[ids[2]]
    assert f">= 2^{p.bits}" in verdicts[ids[3]]
    assert verdicts[ids[4]] is None and verdicts[ids[5]] is None


def test_a_repeated_message_id_in_the_check_is_refused():
    dep = small()
    proxy, _ = _round(dep, 2)
    batch = proxy.share_batch()
    doubled = dataclasses.replace(batch, shares=(batch.shares[0], batch.shares[0]))
    assert "repeated" in dep.server.check(doubled, ROUND)[batch.shares[0][0]]


def test_the_validity_hook_is_pluggable():
    class Even(ShareCheck):
        name = "even"

        def __call__(self, message_id, plaintext, params):
            return None if plaintext[0] % 2 == 0 else "odd first byte"

    dep = small()
    proxy, _ = _round(dep, 8)
    server = server_module.SecureSumServer(dep.params, dep.server_keys, checks=(Even(),))
    verdicts = server.check(proxy.share_batch(), ROUND)
    assert {v for v in verdicts.values()} <= {None, "even: odd first byte"}


def test_the_release_over_the_agreed_set_sums_exactly_that_set():
    dep = small()
    proxy, vectors = _round(dep, 6)
    ids = sorted(mid for mid, _ in proxy.share_batch().shares)
    order = [mid for mid, _ in sorted(proxy._shares.items())]
    assert order == ids
    keep = ids[:2] + ids[3:]
    # which vector is which id: the proxy saw them in submission order
    by_id = {mid: i for i, mid in enumerate(proxy._shares)}
    release = Release.from_bytes(proxy.release(keep).to_bytes(), dep.params)
    result = dep.server.aggregate(release, ROUND, min_senders=5, max_senders=20)
    want = vectors[[by_id[m] for m in keep]].sum(axis=0)
    np.testing.assert_array_equal(result.integer_sum, want)
    with pytest.raises(DprecError, match="already released"):
        proxy.release(keep)


def test_a_release_over_an_id_never_accepted_is_refused():
    dep = small()
    proxy, _ = _round(dep, 3)
    with pytest.raises(ReplayError):
        proxy.release([bytes(MESSAGE_ID_BYTES)] + [m for m, _ in proxy.share_batch().shares])


def test_the_server_counts_the_release_before_it_opens_any_share(monkeypatch):
    dep = small()
    proxy, _ = _round(dep, 3)
    release = proxy.release()

    def never(*args, **kwargs):
        raise AssertionError("a share was opened")

    monkeypatch.setattr(server_module, "open_box", never)
    with pytest.raises(BelowThresholdError, match="refused unopened"):
        dep.server.aggregate(release, ROUND, min_senders=4)
    with pytest.raises(OversizedUploadError, match="more than n_clients = 2"):
        dep.server.aggregate(release, ROUND, min_senders=2, max_senders=2)


def test_agree_keeps_what_both_found_valid_with_each_reason():
    a, b, c, d = (bytes([i]) * MESSAGE_ID_BYTES for i in range(4))
    valid, refused = agree({a: None, b: "bad seed", c: None, d: None},
                           {a: None, b: None, c: "bad share"})
    assert valid == [a]
    assert refused == {b: "the proxy refused it: bad seed",
                       c: "the server refused it: bad share",
                       d: "the server gave no verdict on it"}


@pytest.mark.parametrize(("threshold", "min_honest", "n_clients", "why"), [
    (1, 1, 10, "must be >= 2"),
    (2, 10, 30, "below the protocol's min_honest = 10"),
    (20, 10, 15, "no round can ever be released"),
])
def test_settings_that_can_never_release_are_refused(threshold, min_honest, n_clients, why):
    with pytest.raises(DprecError, match=why):
        ReleaseRule(threshold, min_honest, n_clients)


def test_the_rule_releases_at_most_n_clients_and_at_least_its_fewest():
    rule = ReleaseRule(3, 3, 4)
    ids = [bytes([i]) * MESSAGE_ID_BYTES for i in range(6)]
    released, refused, below = rule.choose(ids, np.random.default_rng(1))
    assert len(released) == 4 and len(refused) == 2 and below == []
    assert set(released) | set(refused) == set(ids)
    assert all("n_clients = 4" in why for why in refused.values())
    released, refused, below = rule.choose(ids[:2], np.random.default_rng(1))
    assert released == [] and refused == {} and below == ids[:2]


def test_a_check_batch_keeps_its_exact_length():
    dep = small()
    proxy, _ = _round(dep, 2)
    data = proxy.share_batch().to_bytes()
    assert ShareBatch.from_bytes(data, dep.params).shares == proxy.share_batch().shares
    with pytest.raises(OversizedUploadError):
        ShareBatch.from_bytes(data + b"\0", dep.params)
    assert Upload.size(dep.params) > 0
