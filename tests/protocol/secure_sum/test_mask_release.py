"""The service proxy's streamed ring release (issue 31 §4): the proxy folds the mask sum
chunk by chunk and releases it with the agreed ids only; the server sums the shares it
kept at the share check of exactly those ids."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from secure_sum_helpers import ROUND, deploy, small

from dprec.protocol.secure_sum import choose_params
from dprec.protocol.secure_sum.errors import (
    BelowThresholdError,
    OversizedUploadError,
    ReplayError,
    SecureSumError,
)
from dprec.protocol.secure_sum.messages import MESSAGE_ID_BYTES, MaskRelease, Release, Upload


def _streamed(dep, vectors, chunks: int):
    """(proxy, release bytes, kept shares, ids): the uploads submitted, checked and folded
    in ``chunks`` (as :func:`dprec.services.rounds.settle_round` does)."""
    proxy = dep.proxy()
    kept: dict[bytes, bytes] = {}
    ids = []
    for part in np.array_split(np.arange(len(vectors)), chunks):
        chunk = []
        for i in part:
            body = dep.client.seal(vectors[i], ROUND)
            proxy.submit(f"u{i}", body)
            chunk.append(Upload.from_bytes(body, dep.params).message_id)
        verdicts = dep.server.check(proxy.share_batch(chunk), ROUND, kept)
        assert all(why is None for why in verdicts.values())
        proxy.fold(chunk)
        ids.extend(chunk)
    return proxy, proxy.mask_release().to_bytes(), kept, ids


def _kept(kept):
    return lambda ids: [kept.get(m) for m in ids]


def test_the_streamed_release_sums_the_same_integers_as_the_whole_one():
    dep = small()
    vectors = np.random.default_rng(3).integers(-50, 51, (7, dep.params.dimension))
    _, data, kept, _ = _streamed(dep, vectors, chunks=3)
    release = MaskRelease.from_bytes(data, dep.params)
    got = dep.server.sum_kept(release, ROUND, 2, 20, _kept(kept))
    whole = dep.proxy(seed=1)
    for i, v in enumerate(vectors):
        whole.submit(f"u{i}", dep.client.seal(v, ROUND))
    want = dep.server.aggregate(Release.from_bytes(whole.release().to_bytes(), dep.params),
                                ROUND)
    np.testing.assert_array_equal(got.integer_sum, vectors.sum(axis=0))
    np.testing.assert_array_equal(got.integer_sum, want.integer_sum)
    assert got.contributors == 7


def test_the_release_size_does_not_grow_with_the_share_bytes():
    growth = {}
    for dimension in (5, 400):
        dep = deploy(choose_params(dimension=dimension, expected_clients=20, clip=1.0,
                                   gamma=100.0))
        sizes = []
        for n in (3, 4):
            vectors = np.zeros((n, dimension), dtype=np.int64)
            _, data, _, _ = _streamed(dep, vectors, chunks=2)
            sizes.append(len(data))
        growth[dimension] = sizes[1] - sizes[0]
        assert dep.params.share_bytes >= dimension  # a share is bigger than an id at d 400
    assert growth == {5: MESSAGE_ID_BYTES, 400: MESSAGE_ID_BYTES}


def test_the_proxy_forgets_each_folded_chunk():
    dep = small()
    proxy, _, _, _ = _streamed(dep, np.zeros((4, dep.params.dimension), np.int64), chunks=2)
    assert not proxy._seeds and not proxy._shares
    with pytest.raises(SecureSumError, match="already released"):
        proxy.mask_release()


def test_a_fold_of_an_id_never_accepted_or_folded_twice_is_refused():
    dep = small()
    proxy = dep.proxy()
    body = dep.client.seal(np.zeros(dep.params.dimension, np.int64), ROUND)
    proxy.submit("u0", body)
    mid = Upload.from_bytes(body, dep.params).message_id
    with pytest.raises(ReplayError):
        proxy.fold([bytes(MESSAGE_ID_BYTES)])
    with pytest.raises(ReplayError):
        proxy.fold([mid, mid])
    proxy.fold([mid])
    with pytest.raises(ReplayError):
        proxy.fold([mid])
    with pytest.raises(BelowThresholdError):
        proxy.mask_release()


def test_the_server_refuses_a_release_it_cannot_sum_soundly():
    dep = small()
    vectors = np.zeros((4, dep.params.dimension), np.int64)
    _, data, kept, ids = _streamed(dep, vectors, chunks=1)
    release = MaskRelease.from_bytes(data, dep.params)
    read = []

    def counting(ids):
        read.append(len(ids))
        return [kept.get(m) for m in ids]

    with pytest.raises(BelowThresholdError, match="refused unopened"):
        dep.server.sum_kept(release, ROUND, 5, 20, counting)
    with pytest.raises(OversizedUploadError, match="refused unopened"):
        dep.server.sum_kept(release, ROUND, 2, 3, counting)
    assert read == []
    kept.pop(ids[0])
    with pytest.raises(SecureSumError, match="did not accept"):
        dep.server.sum_kept(release, ROUND, 2, 20, _kept(kept))
    twice = MaskRelease(ROUND, (ids[1], ids[1], ids[2], ids[3]), release.mask_sum,
                        release.proxy_key)
    with pytest.raises(ReplayError):
        dep.server.sum_kept(twice, ROUND, 2, 20, _kept(kept))


def test_a_share_the_check_refuses_is_not_kept():
    dep = small()
    proxy = dep.proxy()
    for i in range(3):
        proxy.submit(f"u{i}", dep.client.seal(np.zeros(dep.params.dimension, np.int64), ROUND))
    batch = proxy.share_batch()
    shares = list(batch.shares)
    shares[0] = (shares[0][0], shares[1][1])  # another upload's box: its tag fails
    kept: dict[bytes, bytes] = {}
    verdicts = dep.server.check(dataclasses.replace(batch, shares=tuple(shares)), ROUND, kept)
    assert verdicts[shares[0][0]] is not None
    assert set(kept) == {shares[1][0], shares[2][0]}
