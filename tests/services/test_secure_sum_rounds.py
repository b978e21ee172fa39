"""Secure-sum rounds over the services always finish and release once (issue 31 §2, §5): the
probe's findings, each reproduced through the real server and proxy apps (ASGI, in this
process). Before the fix, one bad share answered every close 409 forever; more uploads than
n_clients wrapped the ring; a threshold below 2 or min_honest started and failed at the
close (500) or released below min_honest."""

from __future__ import annotations

import secrets

import numpy as np
import pytest
from svc import AUTH, OPERATOR_AUTH, Stack

from dprec.errors import DprecError
from dprec.protocol.secure_sum.deploy import sealed_uploads
from dprec.protocol.secure_sum.messages import (
    MESSAGE_ID_BYTES,
    Upload,
    associated_data,
    run_id,
)
from dprec.protocol.secure_sum.ring import SEED_BYTES, encode_elements
from dprec.protocol.secure_sum.sealed import KeyPair, seal
from dprec.protocol.secure_sum.wire import ClientBlock, SumUpload
from dprec.systems.deployable import ProtocolInfo
from dprec.systems.dp_pop.deploy import round_of
from dprec.systems.dp_pop.messages import PopularityModel
from dprec.systems.dp_pop.system import DpPopConfig

N_ITEMS = 16


def pop_info(n_clients: int, min_honest: int) -> ProtocolInfo:
    """A ring round (``validity=none``): these tests craft ring shares by hand."""
    return ProtocolInfo("dp-pop", N_ITEMS, DpPopConfig(
        epsilon=2.0, k=3, n_clients=n_clients, min_honest=min_honest, validity="none"))


class PopRound:
    """A started dp-pop stack and the keys its clients seal to."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        stack.start()
        self.cal = round_of(stack.info)
        self.server_key = PopularityModel.from_bytes(
            stack.server.get("/v1/artefacts/model").content).server_key
        state = stack.proxy.get("/v1/round").json()
        self.proxy_key = bytes.fromhex(state["published"]["secure_sum_proxy_key"])

    def uploads(self, ids, vectors) -> list[tuple[int, bytes]]:
        rows = np.asarray(vectors, np.int64)
        block = ClientBlock(np.asarray(ids), rows.sum(axis=0), lambda: rows, 0,
                            self.server_key, self.proxy_key, self.cal.params)
        return list(sealed_uploads(block))

    def crafted(self, client: int, share: bytes, share_key: bytes | None = None
                ) -> tuple[int, bytes]:
        """A hostile client's upload: a good seed box, the plaintext ``share`` sealed to
        ``share_key`` (default: the server's), both bound to this run."""
        mid, seed = secrets.token_bytes(MESSAGE_ID_BYTES), secrets.token_bytes(SEED_BYTES)
        run = run_id(self.proxy_key, self.server_key)
        upload = Upload(0, mid,
                        seal(self.proxy_key, seed, associated_data(run, 0, mid, "proxy")),
                        seal(share_key or self.server_key, share,
                             associated_data(run, 0, mid, "server")))
        return client, SumUpload(upload.to_bytes()).to_bytes()

    def out_of_ring(self, client: int) -> tuple[int, bytes]:
        """An upload whose server share holds values >= q (its seed box is fine)."""
        p = self.cal.params
        values = np.full(p.dimension, p.modulus + 1, np.uint64)
        assert int(values[0]) < 1 << (8 * p.element_bytes)  # fits the wire, not the ring
        return self.crafted(client, encode_elements(values, p.element_bytes))

    def wrong_key(self, client: int) -> tuple[int, bytes]:
        """An upload whose server share is sealed to another key (its seed box is fine)."""
        return self.crafted(client, bytes(self.cal.params.share_bytes), KeyPair().public)

    def submit_all(self, uploads) -> list[int]:
        return [self.stack.submit(0, cid, body).status_code for cid, body in uploads]

    def counts(self) -> np.ndarray:
        return PopularityModel.from_bytes(
            self.stack.server.get("/v1/artefacts/model").content).counts


def honest(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = np.zeros((n, N_ITEMS), np.int64)
    for row in v:
        row[rng.choice(N_ITEMS, 3, replace=False)] = 1
    return v


def test_a_share_sealed_to_the_wrong_key_is_refused_and_the_honest_ones_are_summed(tmp_path):
    with Stack(tmp_path, pop_info(30, 10), threshold=10, batch_senders=10) as s:
        r = PopRound(s)
        good = honest(10)
        ups = r.uploads(range(1, 11), good)
        bad = [r.wrong_key(99)]  # the share is sealed to another key than the server's
        assert r.submit_all(ups + bad) == [202] * 11  # the proxy cannot tell: 202
        closed = s.close(0)
        assert closed.status_code == 200, closed.text
        out = closed.json()
        assert out["outcomes"] == {"summed": 10, "refused": 1, "below_threshold": 0, "lost": 0}
        assert out["forwarded"] is True and out["batch_senders"] == [10]
        (mid, why), = [(m, o) for m, o in out["uploads"].items() if o["outcome"] == "refused"]
        assert mid == SumUpload.from_bytes(bad[0][1]).message_id.hex()
        assert "WrongRecipientError" in why["reason"] and "server" in why["reason"]
        assert len(out["uploads"]) == 11  # every acknowledged upload has its one outcome
        # the published counts are the honest sum (plus the noise the clients drew)
        state = s.proxy.get("/v1/round").json()
        assert state["problem"] is None and state["finished"] is True
        assert state["history"][0]["outcomes"]["summed"] == 10
        assert list(state["history"][0]["refused_reasons"].values()) == [1]
        assert "uploads" not in state["history"][0]  # each upload's: GET .../outcome
        assert s.proxy.get("/v1/rounds/0/outcome").json() == out  # each upload's, too
        assert s.proxy.get("/v1/rounds/1/outcome").status_code == 404
        assert s.server.get("/v1/round").json()["history"][0]["updated"] is True
        assert r.counts().shape == (N_ITEMS,)


def test_a_share_holding_a_value_at_least_q_is_refused_with_its_reason(tmp_path):
    with Stack(tmp_path, pop_info(3, 2), threshold=2, batch_senders=2) as s:
        r = PopRound(s)
        assert r.cal.params.bits % 8  # room on the wire for a value >= q
        ups = r.uploads([1, 2], np.zeros((2, N_ITEMS), np.int64))
        assert r.submit_all([*ups, r.out_of_ring(3)]) == [202] * 3
        out = s.close(0).json()
        assert out["outcomes"]["summed"] == 2 and out["outcomes"]["refused"] == 1
        reasons = [o["reason"] for o in out["uploads"].values() if o["outcome"] == "refused"]
        assert len(reasons) == 1 and f">= 2^{r.cal.params.bits}" in reasons[0]


def test_no_more_uploads_than_n_clients_are_taken_so_the_ring_cannot_wrap(tmp_path):
    with Stack(tmp_path, pop_info(3, 2), threshold=2, batch_senders=2) as s:
        r = PopRound(s)
        one_hot = np.zeros((5, N_ITEMS), np.int64)
        one_hot[:, 0] = 1
        codes = r.submit_all(r.uploads(range(1, 6), one_hot))
        assert codes[:3] == [202] * 3 and codes[3:] == [409, 409]
        assert "full" in s.submit(0, 9, r.uploads([9], one_hot[:1])[0][1]).json()["error"]
        # a resend by a client already held (its answer was lost) is not "full": the device
        # reads "already submitted" on a resend as accepted
        again = s.submit(0, 1, r.uploads([1], one_hot[:1])[0][1])
        assert again.status_code == 409 and "already submitted" in again.json()["error"]
        out = s.close(0).json()
        assert out["outcomes"]["summed"] == 3 and out["senders"] == 3
        assert out["release_rule"] == {"fewest": 2, "most": 3}


def test_too_few_valid_uploads_end_the_round_below_threshold_with_each_outcome(tmp_path):
    with Stack(tmp_path, pop_info(30, 10), threshold=10, batch_senders=10) as s:
        r = PopRound(s)
        ups = r.uploads(range(1, 10), honest(9))  # 9 valid
        bad = [r.wrong_key(50)]
        assert r.submit_all(ups + bad) == [202] * 10
        closed = s.close(0)
        assert closed.status_code == 200, closed.text  # the round finishes
        out = closed.json()
        assert out["forwarded"] is False and out["batch_senders"] == []
        # 10 held: the server checked them; 9 valid are fewer than 10, nothing released
        assert out["outcomes"] == {"summed": 0, "refused": 1, "below_threshold": 9,
                                   "lost": 0}
        assert len(out["uploads"]) == 10
        server = s.server.get("/v1/round").json()
        assert server["round"] == 1 and server["history"][0]["updated"] is False
        assert server["history"][0]["batch_senders"] == []


def test_fewer_held_than_the_rule_end_below_threshold_unseen_by_the_server(tmp_path):
    with Stack(tmp_path, pop_info(30, 10), threshold=10, batch_senders=10) as s:
        r = PopRound(s)
        assert r.submit_all(r.uploads(range(1, 4), honest(3))) == [202] * 3
        out = s.close(0).json()
        assert out["outcomes"] == {"summed": 0, "refused": 0, "below_threshold": 3,
                                   "lost": 0}
        assert {o["outcome"] for o in out["uploads"].values()} == {"below_threshold"}


def test_a_close_again_returns_the_same_outcome_and_no_second_release(tmp_path):
    with Stack(tmp_path, pop_info(30, 10), threshold=10, batch_senders=10) as s:
        r = PopRound(s)
        r.submit_all(r.uploads(range(1, 13), honest(12)))
        first = s.close(0).json()
        again = s.close(0)
        assert again.status_code == 200 and again.json() == first
        assert s.server.get("/v1/round").json()["history"][0]["batch_senders"] == [12]


@pytest.mark.parametrize(("threshold", "why"), [(1, "must be >= 2"),
                                                (2, "below the protocol's min_honest = 10")])
def test_a_proxy_that_can_never_release_refuses_to_start(tmp_path, threshold, why):
    stack = Stack(tmp_path, pop_info(30, 10), threshold=threshold, batch_senders=threshold)
    with pytest.raises(DprecError, match=why):
        stack.__enter__()


def test_the_proxy_refuses_a_server_publishing_another_min_honest(tmp_path):
    with Stack(tmp_path, pop_info(30, 10), threshold=10, batch_senders=10,
               min_honest=20) as s:
        r = PopRound(s)
        state = s.proxy.get("/v1/round").json()
        assert state["accepting"] is False and "min_honest = 10" in state["problem"]
        assert "--min-honest 20" in state["problem"]
        code = r.submit_all(r.uploads([1], honest(1)))
        assert code == [503]


def test_the_servers_secret_closes_no_round_on_the_proxy(tmp_path):
    with Stack(tmp_path, pop_info(30, 10), threshold=10, batch_senders=10) as s:
        r = PopRound(s)
        r.submit_all(r.uploads(range(1, 12), honest(11)))
        assert s.proxy.post("/v1/rounds/0/close", headers=AUTH).status_code == 401
        assert s.proxy.get("/v1/round").json()["accepting"] is True
        assert s.proxy.post("/v1/rounds/0/close", headers=OPERATOR_AUTH).status_code == 200


def test_an_upload_sealed_for_another_run_is_refused_at_the_proxy(tmp_path):
    with Stack(tmp_path, pop_info(30, 10), threshold=10, batch_senders=10) as s:
        r = PopRound(s)
        rows = honest(1)
        other_run = ClientBlock(np.array([1]), rows.sum(axis=0), lambda: rows, 0,
                                KeyPair().public, r.proxy_key, r.cal.params)
        _, body = next(sealed_uploads(other_run))
        refused = s.submit(0, 1, body)
        assert refused.status_code == 422 and "another run" in refused.json()["error"]


def test_a_settled_round_is_never_released_over_another_set(tmp_path):
    """A retry (or a restart) after the release is queued asks the server nothing and
    queues nothing: the one release stays the one in the outbox (issue 31 §2)."""
    import asyncio

    from dprec.protocol.secure_sum.relay import SecureSumRelay
    from dprec.protocol.secure_sum.validity import ReleaseRule
    from dprec.services.rounds import settle_round
    from dprec.services.store import ProxyStore

    with Stack(tmp_path, pop_info(30, 10), threshold=10, batch_senders=10) as s:
        r = PopRound(s)
        ups = r.uploads(range(1, 13), honest(12))
    info = s.info
    store = ProxyStore(tmp_path / "settle.sqlite3")
    relay = SecureSumRelay(round_of(info).params, tmp_path / "relay", 10, 30)
    relay.server_key = r.server_key
    relay.keys = type(relay.keys).from_raw(  # the stack's proxy key: its uploads open
        (tmp_path / "proxy" / "secure_sum_proxy.key").read_bytes())
    for i, (_, body) in enumerate(ups):
        store.hold(0, bytes([i]) * 16, body, SumUpload.from_bytes(body).message_id)
    asked = []

    async def ask(round, batch):
        asked.append(batch)
        return {relay.message_id(b): None for _, b in ups}

    rule = ReleaseRule(10, 10, 30)
    asyncio.run(settle_round(store, relay, rule, 0, ask))
    first = store.outbox()
    store.hold(0, b"late" * 4, ups[0][1], None)  # whatever is held later changes nothing
    asyncio.run(settle_round(store, relay, rule, 0, ask))
    assert len(asked) == 1 and store.outbox() == first and len(first) == 1
    assert first[0][2] == 12 and len(store.uploads(0)["released"]) == 12
    store.close_db()


def test_a_ring_close_opens_each_seed_box_once_checking_in_chunks(tmp_path, monkeypatch):
    """The close checks the held uploads in chunks (here 5 uploads) and the relay opens each
    seed box once per close (before: three times, for the verdicts, the share batch and the
    release); the release still sums all 12."""
    import asyncio

    import dprec.protocol.secure_sum.proxy as aggregator
    from dprec.protocol.secure_sum.messages import MaskRelease
    from dprec.protocol.secure_sum.relay import SecureSumRelay
    from dprec.protocol.secure_sum.validity import ReleaseRule
    from dprec.protocol.secure_sum.wire import SumRelease
    from dprec.services.rounds import settle_round
    from dprec.services.store import ProxyStore

    with Stack(tmp_path, pop_info(30, 10), threshold=10, batch_senders=10) as s:
        r = PopRound(s)
        ups = r.uploads(range(1, 13), honest(12))
    store = ProxyStore(tmp_path / "settle.sqlite3")
    relay = SecureSumRelay(r.cal.params, tmp_path / "relay", 10, 30)
    relay.server_key = r.server_key
    relay.keys = type(relay.keys).from_raw(
        (tmp_path / "proxy" / "secure_sum_proxy.key").read_bytes())
    for i, (_, body) in enumerate(ups):
        store.hold(0, bytes([i]) * 16, body, SumUpload.from_bytes(body).message_id)
    opened, asked = [], []
    real_open = aggregator.open_box
    monkeypatch.setattr(aggregator, "open_box",
                        lambda *a: opened.append(1) or real_open(*a))

    async def ask(round, batch):
        asked.append(batch)
        return {relay.message_id(b): None for _, b in ups}

    asyncio.run(settle_round(store, relay, ReleaseRule(10, 10, 30), 0, ask,
                             chunk_bytes=5 * len(ups[0][1])))
    (_, _, senders, body), = store.outbox()
    release = MaskRelease.from_bytes(SumRelease.from_bytes(body).data, r.cal.params)
    assert len(opened) == 12 and len(asked) == 3 and senders == len(release.ids) == 12
    assert not relay._open  # every chunk's seeds and shares were forgotten
    store.close_db()


def test_uploads_held_when_the_server_closes_the_round_itself_are_each_lost(tmp_path):
    with Stack(tmp_path, pop_info(30, 10), threshold=10, batch_senders=10,
               watch_seconds=0) as s:
        r = PopRound(s)
        assert r.submit_all(r.uploads(range(1, 5), honest(4))) == [202] * 4
        assert s.server.post("/v1/rounds/0/close", headers=AUTH).status_code == 200
        s.proxy.get("/v1/round")  # the proxy learns of it
        out = s.proxy.get("/v1/rounds/0/outcome").json()
        assert out["outcomes"] == {"summed": 0, "refused": 0, "below_threshold": 0, "lost": 4}
        assert out["lost_senders"] == 4
        assert all("closed round 0" in o["reason"] for o in out["uploads"].values())


def test_serve_keys_writes_an_operator_secret_apart_from_the_shared_one(tmp_path):
    import stat

    from typer.testing import CliRunner

    from dprec.cli import app

    res = CliRunner().invoke(app, ["serve", "keys", str(tmp_path / "k")])
    assert res.exit_code == 0, res.output
    files = {n: tmp_path / "k" / n for n in ("shared.secret", "operator.secret", "token.key")}
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files.values())
    assert files["shared.secret"].read_bytes() != files["operator.secret"].read_bytes()


def test_a_release_that_would_not_fit_the_server_stops_uploads_before_the_close(tmp_path):
    from dprec.services.limits import batch_bytes

    info = pop_info(30, 10)
    with Stack(tmp_path, info, {"max_batch_bytes": batch_bytes(info, 29)}, threshold=10,
               batch_senders=10) as s:
        r = PopRound(s)
        problem = s.proxy.get("/v1/round").json()["problem"]
        assert "n_clients = 30" in problem and "--max-batch-mb" in problem
        assert r.submit_all(r.uploads([1], honest(1))) == [503]
