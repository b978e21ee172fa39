"""Secrets, tokens, rate limits and the stores, one unit at a time."""

import os

import pytest

from dprec.errors import DprecError
from dprec.services.auth import bearer, client_token, read_secret, same_secret
from dprec.services.limits import RateLimiter, TokenBucket
from dprec.services.store import Duplicate, ProxyStore, ServerStore, StoreConflict


def test_secrets_come_from_a_file_or_the_environment_and_are_long(tmp_path, monkeypatch):
    f = tmp_path / "s"
    f.write_text("a" * 40 + "\n")
    assert read_secret(f) == b"a" * 40
    monkeypatch.setenv("X_SECRET", "b" * 20)
    assert read_secret(None, "X_SECRET") == b"b" * 20
    with pytest.raises(DprecError, match="required"):
        read_secret(None, "NOT_SET_HERE")
    f.write_text("short")
    with pytest.raises(DprecError, match=">= 16 bytes") as e:
        read_secret(f)
    assert "short" not in str(e.value)  # never echo a secret
    with pytest.raises(DprecError, match="cannot read"):
        read_secret(tmp_path / "missing")


def test_tokens_are_per_client_and_per_key():
    k1, k2 = b"k" * 32, b"j" * 32
    assert client_token(k1, 5) == client_token(k1, 5)
    assert len({client_token(k1, 5), client_token(k1, 6), client_token(k2, 5)}) == 3
    assert same_secret(client_token(k1, 5), client_token(k1, 5).encode())
    assert not same_secret(None, b"x") and not same_secret("x", b"y")
    assert bearer("Bearer abc") == "abc" and bearer("bearer  abc ") == "abc"
    assert bearer("Basic abc") is None and bearer("Bearer ") is None and bearer(None) is None


def test_token_bucket_and_rate_limiter():
    now = [0.0]
    b = TokenBucket(rate=2.0, burst=3, clock=lambda: now[0])
    assert [b.take() for _ in range(4)] == [0.0, 0.0, 0.0, pytest.approx(0.5)]
    now[0] = 1.0
    assert b.take() == 0.0 and b.take() == 0.0 and b.take() > 0
    lim = RateLimiter(1.0, 1, max_keys=2, clock=lambda: now[0])
    assert lim.take("a") == 0.0 and lim.take("a") > 0 and lim.take("b") == 0.0
    lim.take("c")  # evicts "a", the least recently used
    assert lim.take("a") == 0.0
    with pytest.raises(DprecError):
        TokenBucket(0, 1)


def test_server_store_closes_a_round_once_and_rolls_back_a_failed_close(tmp_path):
    st = ServerStore(tmp_path / "s.db", "fp")
    st.start({"input": "secure", "after": None}, b"v0", "d0")
    assert st.accept("key1", 0, "d", 3, b"b", rounds=2)
    assert not st.accept("key1", 0, "d", 3, b"b", rounds=2)
    with pytest.raises(StoreConflict):
        st.accept("key1", 0, "other", 3, b"b", rounds=2)

    def boom():
        raise RuntimeError("killed mid-aggregation")

    with pytest.raises(RuntimeError):
        st.close(0, 2, boom)
    assert st.round == 0 and st.outcomes() == []  # nothing half-written
    out = st.close(0, 2, lambda: (b"v1", "d1", {}), senders_of=lambda reports: reports // 3)
    assert out.updated and out.version == 1 and st.round == 1
    assert out.batch_senders == (1,) and st.outcomes()[0]["batch_senders"] == [1]
    assert st.close(0, 2, boom) == out  # idempotent: the compute is not run again
    st.close_db()
    again = ServerStore(tmp_path / "s.db", "fp")
    assert again.round == 1 and again.broadcast() == (b"v1", "d1")
    with pytest.raises(DprecError, match="another protocol"):
        ServerStore(tmp_path / "s.db", "other fingerprint")


def test_proxy_store_holds_a_bag(tmp_path):
    st = ProxyStore(tmp_path / "p.db")
    for i in range(5):
        st.hold(0, bytes([i]) * 16, b"report-%d" % i)
    with pytest.raises(Duplicate):
        st.hold(0, bytes([1]) * 16, b"again")
    assert st.held(0) == 5 and st.senders(0) == 5
    seen: list[list[bytes]] = []
    assert st.form_batch(0, 3, lambda rows: seen.append(rows) or b"batch") == 3
    assert st.held(0) == 2 and st.forwarded_senders(0) == 3 and len(st.outbox()) == 1
    assert st.form_batch(0, None, lambda rows: b"rest") == 2
    assert st.forwarded_batches(0) == [3, 2]  # what the proxy states with the round
    for key, *_ in st.outbox():
        st.delivered(key)
    st.finish_round(0, {"round": 0}, 1)
    assert st.held(0) == 0 and st.senders(0) == 0 and st.outcome(0) == {"round": 0}
    assert os.path.getsize(tmp_path / "p.db-wal") == 0  # checkpointed and truncated
