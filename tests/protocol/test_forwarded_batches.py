"""A proxy that forwards a round in several batches: the batch sizes are the services'
proxy's, each batch holds whole submissions, and every forwarded user is charged the
round's smallest batch (issue 20 section 1: not the round's total)."""

import numpy as np
import pytest

from dprec.errors import DprecError
from dprec.privacy.events import EventLog, LocalReportDpEvent, ShuffledReportDpEvent
from dprec.privacy.levels import account
from dprec.protocol.batches import ReportBatch
from dprec.protocol.engine import (
    Clients,
    Sent,
    Server,
    ShufflingProxy,
    forwarded_batch_sizes,
    run_protocol,
)


def _online(senders: int, threshold: int, batch_senders: int) -> list[int]:
    """The services' proxy, one submission at a time (services/proxy/state.py ``submit`` and
    ``close``): a batch of ``batch_senders`` whenever ``batch_senders + threshold`` are
    held, the rest at close if ``threshold`` or more."""
    held, out = 0, []
    for _ in range(senders):
        held += 1
        while held >= batch_senders + threshold:
            out.append(batch_senders)
            held -= batch_senders
    if held >= threshold:
        out.append(held)
    return out


@pytest.mark.parametrize(("senders", "threshold", "batch_senders", "sizes"), [
    (1000, 100, 200, [200] * 5),  # the first reproduction: 5 shuffles of 200
    (500, 2, 2, [2] * 250),  # the second: 250 batches of 2
    (1099, 100, 1000, [1099]),
    (1100, 100, 1000, [1000, 100]),  # the last batch can be as small as the threshold
    (99, 100, 1000, []),  # refused
    (0, 1, 1, []),
])
def test_batch_sizes_are_the_services_proxys(senders, threshold, batch_senders, sizes):
    assert forwarded_batch_sizes(senders, threshold, batch_senders) == sizes
    assert _online(senders, threshold, batch_senders) == sizes


def test_batch_sizes_match_the_online_rule_everywhere():
    rng = np.random.default_rng(0)
    for _ in range(300):
        t = int(rng.integers(1, 30))
        b = int(rng.integers(t, 80))
        n = int(rng.integers(0, 400))
        got = forwarded_batch_sizes(n, t, b)
        assert got == _online(n, t, b), (n, t, b)
        assert sum(got) in (0, n) and all(s >= t for s in got)
    assert forwarded_batch_sizes(250, 100, None) == [250]
    with pytest.raises(DprecError, match="batch_senders must be an integer >= threshold"):
        forwarded_batch_sizes(10, 5, 4)
    with pytest.raises(DprecError, match="batch_senders"):
        ShufflingProxy(5, batch_senders=4)


class _Sink(Server):
    def __init__(self):
        self.batches = []

    def start(self, rng):
        return 0

    def aggregate(self, batches, round):
        got = list(batches)
        self.batches.append(got)
        return round + 1 if got else None


class _Reporting(Clients):
    """``n`` clients, ``k`` one-bit reports each, in blocks of ``block`` clients per message."""

    def __init__(self, n, k, block=7):
        self.n, self.k, self.block = n, k, block
        self.sent_reports = []

    def step(self, broadcast, round, rng):
        users = np.arange(self.n)
        self._sent = [Sent(LocalReportDpEvent(2.5), users, self.k)]
        items = rng.integers(0, 50, (self.n, self.k))
        factors = rng.integers(0, 3, (self.n, self.k)).astype(np.uint8)
        bits = rng.integers(0, 2, (self.n, self.k)).astype(np.uint8)
        self.sent_reports.append(np.sort(((items * 3 + factors) * 2 + bits).ravel()))
        for a in range(0, self.n, self.block):
            yield ReportBatch(users[a:a + self.block], items[a:a + self.block],
                              factors[a:a + self.block], bits=bits[a:a + self.block])

    def sent(self):
        return self._sent


def _codes(batch):
    return (batch.items.astype(np.int64) * 3 + batch.factors) * 2 + batch.bits


def test_the_proxy_forwards_the_services_batches_and_charges_the_smallest():
    n, k, t, b = 53, 4, 5, 12  # 53 = 4 x 12 + 5
    server, clients, log = _Sink(), _Reporting(n, k), EventLog(n)
    proxy = ShufflingProxy(t, batch_senders=b)
    run = run_protocol(server, clients, 2, np.random.default_rng(1), log, proxy=proxy)
    assert [r.updated for r in run.rounds] == [True, True]
    for r in range(2):
        got = server.batches[r]
        assert [len(x) // k for x in got] == [12, 12, 12, 12, 5]  # whole submissions
        assert all(len(x) % k == 0 for x in got)
        # together, exactly the reports the clients sent
        np.testing.assert_array_equal(np.sort(np.concatenate([_codes(x) for x in got])),
                                      clients.sent_reports[r])
    assert proxy.batches == [12, 12, 12, 12, 5]
    assert [e for e, _ in log.keys()] == [ShuffledReportDpEvent(2.5, 5)]
    assert log.counts(ShuffledReportDpEvent(2.5, 5)).tolist() == [2 * k] * n


def test_batches_cost_more_privacy_than_one_shuffle_of_everyone():
    def run(proxy):
        log = EventLog(1200)
        run_protocol(_Sink(), _Reporting(1200, 2, block=500), 1, np.random.default_rng(2),
                     log, proxy=proxy)
        return account(log, 1e-6).user

    one = run(ShufflingProxy(100))
    batched = run(ShufflingProxy(100, batch_senders=1000))  # batches of 1000 and 200
    assert "n=1200" in one.mechanism and "n=200" in batched.mechanism
    assert batched.epsilon > one.epsilon


def test_a_round_below_the_threshold_is_refused_with_batches_too():
    server, log = _Sink(), EventLog(9)
    proxy = ShufflingProxy(10, batch_senders=20)
    run = run_protocol(server, _Reporting(9, 2), 1, np.random.default_rng(0), log, proxy=proxy)
    assert run.rounds_without_update == 1 and len(log) == 0 and proxy.batches == []
    with pytest.raises(DprecError, match="forwarded no batch"):
        proxy.account(LocalReportDpEvent(1.0))
