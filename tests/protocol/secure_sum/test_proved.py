"""The proved secure sum's messages and roles (protocol/secure_sum/proved.py), in process:
the honest sum is exact; an invalid report is refused by the server AND by the proxy's own
joint check (a server that calls it valid is refuted); a release naming a report the server
did not accept is refused whole; a box bound to another public share does not open."""

from __future__ import annotations

import numpy as np
import pytest

from dprec.protocol.secure_sum.errors import SecureSumError
from dprec.protocol.secure_sum.messages import run_id
from dprec.protocol.secure_sum.proved import (
    ProvedBatch,
    ProvedRelease,
    ProvedUpload,
    bound_data,
    prove_and_seal,
    proxy_confirm,
    proxy_prepare,
    seal_verify_key,
    server_sum,
    server_verify,
    verify_key,
)
from dprec.protocol.secure_sum.sealed import KeyPair, seal
from dprec.protocol.secure_sum.vdaf.contribution import dp_pop_check
from dprec.protocol.secure_sum.vdaf.noise_bounds import choose_truncation, truncated_noise_share

D, K, N = 12, 2, 6


@pytest.fixture(scope="module")
def check():
    return dp_pop_check(D, K, choose_truncation(1.0, D, N))


def _round(check, bad: bool = False):
    proxy, server = KeyPair(), KeyPair()
    run = run_id(proxy.public, server.public)
    rng = np.random.default_rng(1)
    ys, uploads = [], []
    for _ in range(N):
        v = np.zeros(D, np.int64)
        v[rng.choice(D, K, replace=False)] = 1
        y = v + truncated_noise_share(check.truncation, rng, vector=v,
                                      l2_bound_sq=check.circuit.l2_bound_sq)
        ys.append(y)
        uploads.append(prove_and_seal(check, run, proxy.public, server.public, y, 0))
    if bad:  # the last report's measurement: far outside the check, proved honestly
        mid = ProvedUpload.from_bytes(uploads[-1], check).message_id
        meas = np.full(check.vdaf.flp.MEAS_LEN, 12345, np.uint64)
        public, (leader, helper) = check.vdaf.shard_encoded(check.ctx, meas, mid,
                                                            bytes(check.rand_size))
        v = check.vdaf
        pub = v.encode_public_share(public)
        uploads[-1] = ProvedUpload(
            0, mid, pub,
            seal(proxy.public, v.encode_input_share(helper), bound_data(run, 0, mid, "proxy", pub)),
            seal(server.public, v.encode_input_share(leader),
                 bound_data(run, 0, mid, "server", pub))).to_bytes()
    ups = [ProvedUpload.from_bytes(u, check) for u in uploads]
    key = verify_key(proxy, run, 0)
    prepared = [proxy_prepare(check, proxy, run, u, key) for u in ups]
    box = seal_verify_key(server.public, run, 0, key)
    items = tuple((u.message_id, u.public_share, u.leader_box, vs)
                  for u, (_, vs) in zip(ups, prepared, strict=True))
    return proxy, server, run, ups, prepared, box, items, ys


def _release(check, proxy, ups, prepared, ids=None) -> ProvedRelease:
    ids = [u.message_id for u in ups] if ids is None else ids
    agg = check.aggregate([state.out_share for state, _ in prepared])
    return ProvedRelease.from_bytes(ProvedRelease(0, proxy.public, agg, tuple(ids)).to_bytes(),
                                    check)


def test_the_honest_reports_verify_and_sum_exactly(check):
    proxy, server, run, ups, prepared, box, items, ys = _round(check)
    batch = ProvedBatch.from_bytes(ProvedBatch(0, proxy.public, box, items).to_bytes(), check)
    outputs: dict[bytes, bytes] = {}
    verdicts, shares = server_verify(check, server, run, batch, 0, outputs)
    assert set(verdicts.values()) == {None} and set(outputs) == set(verdicts)
    for u, (state, vs) in zip(ups, prepared, strict=True):
        assert proxy_confirm(check, state, vs, shares[u.message_id]) is None
    release = _release(check, proxy, ups, prepared)
    kept = lambda ids: [outputs.get(m) for m in ids]  # noqa: E731
    total, count = server_sum(check, release, 0, 2, N, kept)
    np.testing.assert_array_equal(total, np.sum(ys, axis=0))
    assert count == N
    with pytest.raises(SecureSumError, match="outside"):  # before anything is read
        server_sum(check, release, 0, N + 1, 2 * N, lambda ids: pytest.fail("read"))
    with pytest.raises(SecureSumError, match="repeats"):
        server_sum(check, _release(check, proxy, ups, prepared, [ups[0].message_id] * 2), 0,
                   2, N, kept)


def test_an_invalid_report_is_refused_by_both_and_a_release_naming_it_whole(check):
    proxy, server, run, ups, prepared, box, items, _ = _round(check, bad=True)
    outputs: dict[bytes, bytes] = {}
    verdicts, shares = server_verify(check, server, run, ProvedBatch(0, proxy.public, box,
                                                                     items), 0, outputs)
    bad = ups[-1].message_id
    assert "invalid proof" in verdicts[bad] and bad not in outputs
    assert [verdicts[u.message_id] for u in ups[:-1]] == [None] * (N - 1)
    # a server that calls it valid is refuted by the proxy's own joint check
    state, vs = prepared[-1]
    assert "InvalidProofError" in proxy_confirm(check, state, vs, shares[bad])
    assert proxy_confirm(check, state, vs, None) is not None
    with pytest.raises(SecureSumError, match="did not accept"):
        server_sum(check, _release(check, proxy, ups, prepared), 0, 2, N,
                   lambda ids: [outputs.get(m) for m in ids])


def test_a_box_moved_to_another_public_share_does_not_open(check):
    proxy, server, run, ups, prepared, box, items, _ = _round(check)
    mid, _, leader_box, vs = items[0]
    moved = ((mid, items[1][1], leader_box, vs),)
    verdicts, _ = server_verify(check, server, run, ProvedBatch(0, proxy.public, box, moved), 0)
    assert verdicts[mid] is not None and "invalid proof" not in verdicts[mid]
    with pytest.raises(SecureSumError):
        swapped = ProvedUpload(0, ups[0].message_id, ups[1].public_share, ups[0].helper_box,
                               ups[0].leader_box)
        proxy_prepare(check, proxy, run, swapped, verify_key(proxy, run, 0))
