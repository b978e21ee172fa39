"""Each refusal of the secure sum raises its own error (issue 23 §1): wrong key, tampered
ciphertext, a share from another round, a replay, a malformed or oversized share, a round
below the threshold, a second upload from one sender, a second release."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from secure_sum_helpers import ROUND, small

from dprec.errors import DprecError
from dprec.protocol.secure_sum import errors as E
from dprec.protocol.secure_sum.client import SecureSumClient
from dprec.protocol.secure_sum.messages import Release, associated_data
from dprec.protocol.secure_sum.ring import encode_elements
from dprec.protocol.secure_sum.sealed import KeyPair, seal


@pytest.fixture
def dep():
    return small()


def upload(dep, value=1, round_id=ROUND):
    return dep.client.seal(np.full(dep.params.dimension, value), round_id)


def flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 1]) + data[at + 1:]


def released(dep, uploads) -> Release:
    proxy = dep.proxy()
    for i, u in enumerate(uploads):
        proxy.submit(f"user{i}", u)
    return proxy.release()


def with_share(release: Release, i: int, box: bytes) -> Release:
    shares = list(release.shares)
    shares[i] = (shares[i][0], box)
    return dataclasses.replace(release, shares=tuple(shares))


def test_every_refusal_is_a_dprec_error():
    for name in E.__all__:
        assert issubclass(getattr(E, name), DprecError)


def test_a_seed_sealed_to_another_proxy_key_is_refused(dep):
    stranger = SecureSumClient(dep.params, KeyPair().public, dep.server_keys.public)
    with pytest.raises(E.WrongRecipientError, match="another public key"):
        dep.proxy().submit("u", stranger.seal(np.zeros(5, np.int64), ROUND))


def test_a_share_sealed_to_another_server_key_is_refused(dep):
    release = released(dep, [upload(dep), upload(dep)])
    mid = release.shares[1][0]
    box = seal(KeyPair().public, bytes(dep.params.share_bytes),
               associated_data(dep.run, ROUND, mid, "server"))
    with pytest.raises(E.WrongRecipientError):
        dep.server.aggregate(with_share(release, 1, box), ROUND)


def test_an_upload_of_another_run_is_refused_by_the_proxy(dep):
    """The run id (both public keys) is in every box's associated data: an upload sealed
    for a run with another server key fails the proxy's tag (issue 31 §5)."""
    stranger = SecureSumClient(dep.params, dep.proxy_keys.public, KeyPair().public)
    with pytest.raises(E.TamperedCiphertextError, match="another run"):
        dep.proxy().submit("u", stranger.seal(np.zeros(5, np.int64), ROUND))


def test_a_tampered_seed_box_is_refused_by_the_proxy(dep):
    data = upload(dep)
    with pytest.raises(E.TamperedCiphertextError, match="does not verify"):
        dep.proxy().submit("u", flip(data, 28 + 60))  # the seed box spans bytes 28 to 116


def test_a_tampered_share_box_is_refused_by_the_server(dep):
    release = released(dep, [upload(dep), upload(dep)])
    mid, box = release.shares[1]
    with pytest.raises(E.TamperedCiphertextError):
        dep.server.aggregate(with_share(release, 1, flip(box, 60)), ROUND)


def test_an_upload_of_another_round_is_refused(dep):
    with pytest.raises(E.WrongRoundError, match="round 8"):
        dep.proxy().submit("u", upload(dep, round_id=8))


def test_a_box_moved_into_another_round_fails_its_tag(dep):
    data = bytearray(upload(dep, round_id=8))
    data[4:12] = ROUND.to_bytes(8, "big")  # the header says round 7, the AAD was round 8
    with pytest.raises(E.TamperedCiphertextError):
        dep.proxy().submit("u", bytes(data))


def test_a_release_or_share_of_another_round_is_refused_by_the_server(dep):
    release = released(dep, [upload(dep), upload(dep)])
    with pytest.raises(E.WrongRoundError):
        dep.server.aggregate(release, ROUND + 1)
    with pytest.raises(E.TamperedCiphertextError):  # shares sealed for round 7, read as 8
        dep.server.aggregate(dataclasses.replace(release, round_id=ROUND + 1), ROUND + 1)


def test_a_replayed_upload_is_refused(dep):
    proxy = dep.proxy()
    data = upload(dep)
    proxy.submit("alice", data)
    with pytest.raises(E.ReplayError, match="replay"):
        proxy.submit("mallory", data)
    assert proxy.senders == 1


def test_a_release_that_repeats_a_share_is_refused_by_the_server(dep):
    release = released(dep, [upload(dep), upload(dep)])
    doubled = dataclasses.replace(release, shares=release.shares + release.shares[:1])
    with pytest.raises(E.ReplayError):
        dep.server.aggregate(doubled, ROUND)


def test_a_second_upload_from_one_sender_is_refused(dep):
    proxy = dep.proxy()
    proxy.submit("alice", upload(dep))
    with pytest.raises(E.DuplicateSenderError, match="one upload per sender"):
        proxy.submit("alice", upload(dep))


def test_malformed_uploads_are_refused(dep):
    data = upload(dep)
    for bad in (data[:-1], b"XXXX" + data[4:], b""):
        with pytest.raises(E.MalformedUploadError) as info:
            dep.proxy().submit("u", bad)
        assert not isinstance(info.value, E.OversizedUploadError)


def test_a_share_outside_the_ring_is_refused(dep):
    # b = 12 leaves 4 spare bits in each 2-byte element: 0xFFFF is no element of Z_{2^12}
    assert dep.params.bits == 12
    release = released(dep, [upload(dep), upload(dep)])
    mid = release.shares[0][0]
    box = seal(dep.server_keys.public, encode_elements(np.full(5, 0xFFFF, np.uint64), 2),
               associated_data(dep.run, ROUND, mid, "server"))
    with pytest.raises(E.MalformedUploadError, match="2\\^12"):
        dep.server.aggregate(with_share(release, 0, box), ROUND)


def test_oversized_uploads_and_shares_are_refused(dep):
    with pytest.raises(E.OversizedUploadError):
        dep.proxy().submit("u", upload(dep) + b"\0")
    release = released(dep, [upload(dep), upload(dep)])
    mid = release.shares[0][0]
    box = seal(dep.server_keys.public, bytes(2 * 6), associated_data(dep.run, ROUND, mid, "server"))
    with pytest.raises(E.OversizedUploadError):
        dep.server.aggregate(with_share(release, 0, box), ROUND)
    with pytest.raises(E.OversizedUploadError):
        Release.from_bytes(release.to_bytes() + b"\0", dep.params)


def test_a_round_below_the_threshold_releases_nothing(dep):
    proxy = dep.proxy(threshold=3)
    proxy.submit("a", upload(dep))
    proxy.submit("b", upload(dep))
    with pytest.raises(E.BelowThresholdError, match="fewer than the threshold 3"):
        proxy.release()
    proxy.submit("c", upload(dep))
    assert len(proxy.release().shares) == 3


def test_a_round_releases_one_batch_and_then_takes_nothing(dep):
    proxy = dep.proxy()
    proxy.submit("a", upload(dep))
    proxy.submit("b", upload(dep))
    proxy.release()
    with pytest.raises(E.RoundClosedError):
        proxy.release()
    with pytest.raises(E.RoundClosedError):
        proxy.submit("c", upload(dep))


def test_a_client_refuses_one_key_for_both_roles(dep):
    with pytest.raises(E.SecureSumError, match="different keys"):
        SecureSumClient(dep.params, dep.server_keys.public, dep.server_keys.public)


def test_a_client_refuses_values_that_would_wrap(dep):
    with pytest.raises(E.SecureSumError, match="q/2"):
        dep.client.seal(np.full(5, dep.params.modulus // 2), ROUND)
