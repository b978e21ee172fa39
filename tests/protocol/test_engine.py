"""The round engine: events only for what reached the server, transports, batches, timing."""

import numpy as np
import pytest

from dprec.data.synthetic import synthetic
from dprec.errors import DprecError
from dprec.privacy.events import EventLog, LocalReportDpEvent, ShuffledReportDpEvent
from dprec.protocol.batches import ReportBatch
from dprec.protocol.engine import (
    Clients,
    InProcess,
    PassThrough,
    RoleTimer,
    Sent,
    Serialising,
    Server,
    ShufflingProxy,
    run_protocol,
)
from dprec.protocol.shuffler import Shuffler
from dprec.systems.registry import make_system


class _Counting(Server):
    def __init__(self):
        self.seen = []

    def start(self, rng):
        return 0

    def aggregate(self, batches, round):
        got = list(batches)
        self.seen.append(len(got))
        return round + 1 if got else None


class _Reporting(Clients):
    """n clients, each sends k one-bit reports; client u only reports in rounds < stop[u]."""

    def __init__(self, n, k, stop):
        self.n, self.k, self.stop = n, k, np.asarray(stop)
        self._sent = []

    def step(self, broadcast, round, rng):
        users = np.flatnonzero(self.stop > round)
        self._sent = [Sent(LocalReportDpEvent(1.0), users, self.k)] if len(users) else []
        if len(users):
            items = rng.integers(0, 10, (len(users), self.k))
            yield ReportBatch(users, items, np.zeros_like(items, np.uint8),
                              bits=rng.integers(0, 2, items.shape, dtype=np.uint8))

    def sent(self):
        return self._sent


def test_only_forwarded_rounds_are_logged():
    stop = [3, 3, 1, 1]  # from round 1 on, only two clients report
    log = EventLog(4)
    proxy = ShufflingProxy(threshold=2)  # distinct senders
    run = run_protocol(_Counting(), _Reporting(4, 3, stop), 4, np.random.default_rng(0), log,
                       proxy=proxy)
    assert [r.updated for r in run.rounds] == [True, True, True, False]
    assert run.rounds_without_update == 1
    refused = run_protocol(_Counting(), _Reporting(4, 3, stop), 4, np.random.default_rng(0),
                           EventLog(4), proxy=ShufflingProxy(threshold=3))
    assert [r.updated for r in refused.rounds] == [True, False, False, False]
    assert sorted(log.rounds) == [0, 1, 2]
    np.testing.assert_array_equal(log.participants(1), [0, 1])
    keys = {e for e, _ in log.keys()}
    assert keys == {ShuffledReportDpEvent(1.0, 4), ShuffledReportDpEvent(1.0, 2)}


def test_a_round_nobody_reaches_is_not_logged():
    log = EventLog(3)
    run = run_protocol(_Counting(), _Reporting(3, 2, [0, 0, 0]), 2, np.random.default_rng(0),
                       log)
    assert run.rounds_without_update == 2 and len(log) == 0 and run.broadcast == 0


def test_pass_through_streams_each_message():
    server = _Counting()
    run_protocol(server, _Reporting(5, 2, [9] * 5), 3, np.random.default_rng(1), EventLog(5),
                 proxy=PassThrough())
    assert server.seen == [1, 1, 1]


def test_rounds_must_be_positive():
    with pytest.raises(DprecError, match="rounds must be an integer >= 1"):
        run_protocol(_Counting(), _Reporting(1, 1, [1]), 0, np.random.default_rng(0),
                     EventLog(1))


def test_batch_path_equals_the_message_path():
    rng = np.random.default_rng(4)
    items = rng.integers(0, 50, (6, 5))
    factors = rng.integers(0, 4, (6, 5)).astype(np.uint8)
    bits = rng.integers(0, 2, (6, 5)).astype(np.uint8)
    batch = ReportBatch(np.arange(6), items, factors, bits=bits)
    a, b = Shuffler(1, np.random.default_rng(9)), Shuffler(1, np.random.default_rng(9))
    a.submit_batch(batch.items, batch.factors, batch.bits, batch.client_ids)
    for m in reversed(batch.to_messages()):
        b.submit(m.to_bytes())
    assert a.flush() == b.flush()
    back = ReportBatch.from_messages(batch.to_messages())
    np.testing.assert_array_equal(back.bits, bits)
    values = ReportBatch(np.arange(6), items, factors, values=rng.uniform(-1, 1, (6, 5)))
    again = ReportBatch.from_messages(values.to_messages())
    np.testing.assert_allclose(again.values, values.values, rtol=1e-6)


def test_report_batch_validation():
    z = np.zeros((2, 3), np.int64)
    with pytest.raises(DprecError, match="exactly one of bits or values"):
        ReportBatch(np.arange(2), z, z)
    with pytest.raises(DprecError, match="one entry per row"):
        ReportBatch(np.arange(3), z, z, bits=z)


@pytest.mark.parametrize("name", ["dplcf-sp", "lcf-ub"])
def test_serialising_transport_gives_the_same_model(name):
    """Everything DPLCF sends survives to_bytes/from_bytes unchanged (float32 on the wire)."""
    train = synthetic(150, 60, 3_000, rng=5).binary()
    plain = make_system(name).fit(train, np.random.default_rng(2))
    transport = Serialising()
    model = make_system(name)
    model.transport = transport
    wired = model.fit(train, np.random.default_rng(2))
    assert transport.bytes_carried > 0
    np.testing.assert_array_equal(plain.broadcast.indices, wired.broadcast.indices)
    np.testing.assert_array_equal(plain.broadcast.sims, wired.broadcast.sims)


def test_serialising_carries_the_item_matrix_as_float32():
    V = np.random.default_rng(0).standard_normal((7, 3))
    got = Serialising().carry(V)
    assert got.dtype == np.float64 and got.shape == V.shape
    np.testing.assert_array_equal(got, V.astype(np.float32).astype(np.float64))
    assert InProcess().carry(V) is V


def test_role_timer_charges_exclusive_time():
    import time
    timer = RoleTimer()

    def slow(n):
        for i in range(n):
            time.sleep(0.01)
            yield i

    def pull(items):
        return sum(1 for _ in timer.iterate(items, "proxy"))

    timer.call("server", pull, timer.iterate(slow(3), "clients"))
    assert timer.seconds["clients"] >= 0.03
    assert timer.seconds["proxy"] < 0.01 and timer.seconds["server"] < 0.01
