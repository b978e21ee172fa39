"""One in-process secure-sum proxy: dp-pop's, dpals' and dp-fedavg's are subclasses of
:class:`InProcessSumProxy`, keep only what differs, and refuse a round under ``min_honest``
the same way (no batch, nothing accounted)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from dprec.errors import DprecError
from dprec.protocol.secure_sum.in_process import PUBLISHED_KEY, InProcessSumProxy
from dprec.protocol.secure_sum.vdaf.contribution import dp_pop_check
from dprec.protocol.secure_sum.vdaf.noise_bounds import choose_truncation
from dprec.protocol.secure_sum.wire import ClientBlock, ExactSum
from dprec.systems.dp_fedavg.proxy import FedAvgSumProxy
from dprec.systems.dp_pop.proxy import ExactSumProxy as PopSumProxy
from dprec.systems.dpals.proxy import ExactSumProxy as DpalsSumProxy

PROXIES = (PopSumProxy, DpalsSumProxy, FedAvgSumProxy)
SHARED = ("__init__", "forward", "forward_sum", "account", "adopt_published", "start")


def _block(proxy: type, rows: np.ndarray):
    """One message of ``len(rows)`` clients whose vectors are ``rows`` (int64)."""
    ids = np.arange(len(rows))
    return ClientBlock(ids, rows.sum(axis=0), lambda: rows, 0, b"s" * 32, None, None)


def _total(batch) -> np.ndarray:
    return batch.total


@pytest.mark.parametrize("proxy", PROXIES)
def test_each_proxy_keeps_only_what_differs(proxy):
    assert issubclass(proxy, InProcessSumProxy)
    overridden = [name for name in SHARED if name in vars(proxy)]
    assert overridden == [], f"{proxy.__qualname__} redefines {overridden}"
    assert not inspect.isabstract(proxy)


@pytest.mark.parametrize("proxy", PROXIES)
def test_each_proxy_refuses_a_round_under_min_honest_the_same_way(proxy):
    rng = np.random.default_rng(0)
    rows = rng.integers(-5, 6, (5, 7), dtype=np.int64)
    p = proxy(6)
    assert list(p.forward(iter([_block(proxy, rows[:2]), _block(proxy, rows[2:])]))) == []
    assert (p.forwarded, p.senders, p.batches) == (False, 5, [])
    with pytest.raises(DprecError, match="one batch"):
        p.account("event")
    assert p.forward_sum(rows.sum(axis=0), 5) is None
    assert list(p.forward(iter([]))) == [] and p.senders == 0 and not p.forwarded


@pytest.mark.parametrize("proxy", PROXIES)
def test_each_proxy_forwards_one_exact_sum_at_min_honest(proxy):
    rng = np.random.default_rng(1)
    rows = rng.integers(-5, 6, (5, 7), dtype=np.int64)
    p = proxy(5)
    batches = list(p.forward(iter([_block(proxy, rows[:2]), _block(proxy, rows[2:])])))
    assert len(batches) == 1 and (p.forwarded, p.senders, p.batches) == (True, 5, [5])
    np.testing.assert_array_equal(_total(batches[0]), rows.sum(axis=0))
    assert p.account("event") == "event"


@pytest.mark.parametrize("proxy", PROXIES)
def test_each_proxy_refuses_a_published_key_that_is_not_32_hex_bytes(proxy):
    p = proxy(1)
    for bad in ({}, {PUBLISHED_KEY: "zz" * 32}, {PUBLISHED_KEY: "ab" * 31}, {PUBLISHED_KEY: 7}):
        with pytest.raises(DprecError, match="32-byte secure-sum key"):
            p.adopt_published(bad)
    p.adopt_published({PUBLISHED_KEY: "ab" * 32})
    assert p.public_key == bytes.fromhex("ab" * 32)


@pytest.mark.parametrize("proxy", PROXIES)
def test_each_proxy_sums_client_blocks_only(proxy):
    """All three systems' clients send the one ClientBlock; anything else is refused."""
    with pytest.raises(DprecError, match="proxy sums ClientBlocks"):
        list(proxy(1).forward(iter([ExactSum(np.ones(3, np.int64), 1)])))


def test_only_the_simulated_secure_sums_that_seal_in_process_make_a_key():
    keyed = {}
    for proxy in PROXIES:
        p = proxy(1)
        p.start(np.random.default_rng(0))
        keyed[proxy] = p.public_key is not None
    assert keyed == {PopSumProxy: True, DpalsSumProxy: True, FedAvgSumProxy: False}


@pytest.mark.parametrize("proxy", PROXIES)
def test_each_proxy_refuses_what_the_validity_check_refuses(proxy):
    """A row outside the check's bounds is left out of the sum and counted with its reason;
    with no check the same row is summed."""
    check = dp_pop_check(7, 2, choose_truncation(0.05, 7, 5))
    rng = np.random.default_rng(2)
    rows = rng.integers(0, 2, (5, 7), dtype=np.int64) * (np.arange(7) < 2)
    rows[3] = 2047  # q/2 - 1 on every coordinate
    checked = proxy(4, check)
    batch = list(checked.forward(iter([_block(proxy, rows[:2]), _block(proxy, rows[2:])])))
    np.testing.assert_array_equal(_total(batch[0]), np.delete(rows, 3, axis=0).sum(axis=0))
    assert checked.outcomes == [{"summed": 4, "refused": 1, "below_threshold": 0, "lost": 0}]
    assert checked.refused_reasons == {"validity: range": 1}
    per_round = proxy(4, [check])  # one check per round (dpals), round 0
    assert len(list(per_round.forward(iter([_block(proxy, rows)])))) == 1
    assert per_round.refused_reasons == {"validity: range": 1}
    unchecked = proxy(5)
    batch = list(unchecked.forward(iter([_block(proxy, rows)])))
    np.testing.assert_array_equal(_total(batch[0]), rows.sum(axis=0))
    assert unchecked.outcomes[0]["refused"] == 0
