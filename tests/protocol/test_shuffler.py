"""The shuffling proxy: anonymity, order independence, threshold, byte counts."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dprec.errors import DprecError
from dprec.protocol.messages import GradientReports, ShuffledReports
from dprec.protocol.shuffler import Shuffler, ShuffleRefusedError


def _client_messages(n_clients=40, k=7, seed=0):
    rng = np.random.default_rng(seed)
    items = rng.integers(0, 500, (n_clients, k))
    factors = rng.integers(0, 5, (n_clients, k))
    bits = rng.integers(0, 2, (n_clients, k))
    msgs = [GradientReports(100 + u, items[u], factors[u], bits[u]) for u in range(n_clients)]
    return msgs, items, factors, bits


def _as_rows(out: ShuffledReports) -> np.ndarray:
    return np.stack([out.items, out.factors, out.bits], axis=1).astype(np.int64)


def _multiset(rows: np.ndarray) -> np.ndarray:
    return rows[np.lexsort(rows.T[::-1])]


def test_output_is_the_multiset_of_all_reports():
    msgs, items, factors, bits = _client_messages()
    shuffler = Shuffler(10, np.random.default_rng(1))
    for m in msgs:
        shuffler.submit(m)
    assert shuffler.held == items.size
    out = shuffler.flush()
    assert isinstance(out, ShuffledReports) and not hasattr(out, "client_id")
    expected = np.stack([items.ravel(), factors.ravel(), bits.ravel()], axis=1)
    np.testing.assert_array_equal(_multiset(_as_rows(out)), _multiset(expected))
    # the order was actually changed
    assert not np.array_equal(_as_rows(out), expected)
    assert shuffler.held == 0


def test_permuting_clients_or_ids_gives_identical_output():
    msgs, *_ = _client_messages()
    outputs = []
    for order_seed in range(4):
        order = np.random.default_rng(order_seed).permutation(len(msgs))
        shuffler = Shuffler(1, np.random.default_rng(7))
        for i in order:
            m = msgs[i]
            # the id is metadata: a different id must not change anything either
            shuffler.submit(GradientReports(order_seed * 1000 + i, m.items, m.factors, m.bits))
        outputs.append(shuffler.flush().to_bytes())
    assert all(o == outputs[0] for o in outputs)


def test_batch_path_equals_message_path():
    msgs, items, factors, bits = _client_messages()
    one = Shuffler(5, np.random.default_rng(3))
    for m in msgs:
        one.submit(m.to_bytes())  # the service path: bytes in
    batch = Shuffler(5, np.random.default_rng(3))
    batch.submit_batch(items, factors, bits, client_ids=np.arange(len(msgs)))
    assert one.bytes_up == batch.bytes_up == sum(m.nbytes for m in msgs)
    assert one.messages_received == batch.messages_received == len(msgs)
    a, b = one.flush(), batch.flush()
    assert a == b
    assert one.bytes_down == batch.bytes_down == len(a.to_bytes())


def test_threshold_refusal_keeps_reports():
    msgs, *_ = _client_messages(n_clients=3, k=4)
    shuffler = Shuffler(3, np.random.default_rng(0))
    shuffler.submit(msgs[0])
    shuffler.submit(msgs[1])
    with pytest.raises(ShuffleRefusedError, match="threshold 3 to forward, got 2 \\(8 reports"):
        shuffler.flush()
    assert shuffler.held == 8 and shuffler.bytes_down == 0 and shuffler.senders == 2
    shuffler.submit(msgs[2])
    assert len(shuffler.flush()) == 12
    with pytest.raises(ShuffleRefusedError, match="got 0"):
        shuffler.flush()


def test_threshold_counts_senders_not_reports():
    """One client with k reports must not pass a threshold of k on its own."""
    msgs, *_ = _client_messages(n_clients=2, k=50)
    shuffler = Shuffler(2, np.random.default_rng(0))
    shuffler.submit(msgs[0])
    assert shuffler.held == 50
    with pytest.raises(ShuffleRefusedError, match="got 1"):
        shuffler.flush()


@pytest.mark.parametrize("path", ["message", "bytes", "batch"])
def test_replays_and_duplicate_senders_are_refused(path):
    from dprec.protocol.shuffler import SubmissionRefusedError
    msgs, items, factors, bits = _client_messages(n_clients=4, k=3)
    shuffler = Shuffler(1, np.random.default_rng(0))

    def send(i):
        if path == "message":
            shuffler.submit(msgs[i])
        elif path == "bytes":
            shuffler.submit(msgs[i].to_bytes())
        else:
            shuffler.submit_batch(items[[i]], factors[[i]], bits[[i]], np.array([100 + i]))

    send(0)
    with pytest.raises(SubmissionRefusedError, match="sender 100 already submitted"):
        send(0)
    assert shuffler.held == 3 and shuffler.senders == 1
    send(1)
    shuffler.flush()
    send(0)  # a new round: the sender may submit again
    assert shuffler.senders == 1


def test_duplicate_ids_in_one_batch_are_refused():
    from dprec.protocol.shuffler import SubmissionRefusedError
    shuffler = Shuffler(1, np.random.default_rng(0))
    z = np.zeros((2, 3), int)
    with pytest.raises(SubmissionRefusedError, match="same sender twice"):
        shuffler.submit_batch(z, z, z, np.array([7, 7]))
    assert shuffler.held == 0 and shuffler.senders == 0


def test_memory_is_bounded_per_sender_and_in_total():
    from dprec.protocol.shuffler import SubmissionRefusedError
    msgs, *_ = _client_messages(n_clients=5, k=4)
    small = Shuffler(1, np.random.default_rng(0), max_reports_per_sender=3)
    with pytest.raises(SubmissionRefusedError, match="at most 3 reports per round, got 4"):
        small.submit(msgs[0])
    total = Shuffler(1, np.random.default_rng(0), max_reports=10)
    total.submit(msgs[0])
    total.submit(msgs[1])
    with pytest.raises(SubmissionRefusedError, match="holds at most 10 reports"):
        total.submit(msgs[2])
    assert total.held == 8 and total.senders == 2


def test_byte_counters_accumulate_over_flushes():
    msgs, *_ = _client_messages(n_clients=6, k=3)
    shuffler = Shuffler(1, np.random.default_rng(0))
    down = 0
    for m in msgs:
        shuffler.submit(m)
        down += len(shuffler.flush().to_bytes())
    assert shuffler.bytes_up == sum(len(m.to_bytes()) for m in msgs)
    assert shuffler.bytes_down == down
    assert shuffler.reports_forwarded == 18


def test_positions_are_uniform():
    """Each arrangement of three distinct reports is equally likely (chi-square)."""
    msgs = [GradientReports(u, [u], [0], [0]) for u in range(3)]
    shuffler = Shuffler(3, np.random.default_rng(11))
    perms = {p: i for i, p in enumerate(itertools.permutations(range(3)))}
    counts = np.zeros(6)
    draws = 6000
    for _ in range(draws):
        for m in msgs:
            shuffler.submit(m)
        counts[perms[tuple(shuffler.flush().items.tolist())]] += 1
    assert stats.chisquare(counts).pvalue > 1e-3


def test_bad_input():
    with pytest.raises(DprecError, match="threshold must be an integer >= 1, got 0"):
        Shuffler(0, np.random.default_rng(0))
    with pytest.raises(DprecError, match="rng must be a numpy.random.Generator"):
        Shuffler(1, 42)
    shuffler = Shuffler(1, np.random.default_rng(0))
    with pytest.raises(DprecError, match="GradientReports, ValueReports or bytes"):
        shuffler.submit(ShuffledReports([1], [0], [1]))
    with pytest.raises(DprecError, match="ValueReports or bytes, got ShuffledReports"):
        shuffler.submit(ShuffledReports([1], [0], [1]).to_bytes())
    with pytest.raises(DprecError, match="equal shape"):
        shuffler.submit_batch(np.zeros((2, 3), int), np.zeros((2, 2), int), np.zeros((2, 3), int),
                              np.arange(2))
    with pytest.raises(DprecError, match="client_ids must have one entry per row"):
        shuffler.submit_batch(
            np.zeros((2, 3), int), np.zeros((2, 3), int), np.zeros((2, 3), int), np.arange(3)
        )
    with pytest.raises(DprecError, match="client_ids are required"):
        shuffler.submit_batch(np.zeros((2, 3), int), np.zeros((2, 3), int), np.zeros((2, 3), int))
    with pytest.raises(DprecError, match="bits must be in"):
        shuffler.submit_batch(np.zeros((1, 2), int), np.zeros((1, 2), int), np.full((1, 2), 3),
                              np.arange(1))
    with pytest.raises(DprecError, match="threshold must be an integer >= 1, got 1.5"):
        Shuffler(1.5, np.random.default_rng(0))
    assert shuffler.held == 0


def test_real_valued_reports_are_shuffled_without_senders():
    """Piecewise-mechanism reports: same multiset out, order independent of the senders."""
    from dprec.protocol.messages import ShuffledValues, ValueReports

    rng = np.random.default_rng(0)
    items = rng.integers(0, 50, size=(6, 4)).astype(np.int32)
    factors = rng.integers(0, 5, size=(6, 4)).astype(np.uint8)
    values = rng.normal(size=(6, 4)).astype(np.float32)
    a = Shuffler(1, np.random.default_rng(9))
    a.submit_batch(items, factors, values=values, client_ids=np.arange(6))
    b = Shuffler(1, np.random.default_rng(9))
    for u in rng.permutation(6):
        b.submit(ValueReports(100 + int(u), items[u], factors[u], values[u]).to_bytes())
    out_a, out_b = a.flush(), b.flush()
    assert isinstance(out_a, ShuffledValues)
    assert out_a == out_b
    got = sorted(zip(out_a.items.tolist(), out_a.factors.tolist(), out_a.values.tolist(),
                     strict=True))
    want = sorted(zip(items.ravel().tolist(), factors.ravel().tolist(),
                      values.ravel().tolist(), strict=True))
    assert got == want
    a.submit_batch(items, factors, values=values, client_ids=np.arange(6))
    with pytest.raises(DprecError, match="mix"):
        a.submit_batch(items, factors, bits=np.zeros_like(items, np.uint8),
                       client_ids=np.arange(6, 12))
    assert a.senders == 6


def _values_batch(seed=0, n_clients=30, k=5):
    rng = np.random.default_rng(seed)
    items = rng.integers(0, 6, (n_clients, k)).astype(np.int32)
    factors = rng.integers(0, 3, (n_clients, k)).astype(np.uint8)
    values = rng.choice(np.array([-0.0, 0.0, 1.5, -1.5, 2.0**-149], np.float32), (n_clients, k))
    return items, factors, values


def test_forwarded_batch_ignores_order_and_batching_signed_zeros_included():
    """Reports that differ only in the sign of a zero are distinct, so no arrival order can
    leak through their relative order; splitting the submissions differently changes nothing."""
    from dprec.protocol.messages import ValueReports

    items, factors, values = _values_batch()
    one = Shuffler(1, np.random.default_rng(5))
    one.submit_batch(items, factors, values=values, client_ids=np.arange(30))
    two = Shuffler(1, np.random.default_rng(5))
    order = np.random.default_rng(1).permutation(30)
    two.submit_batch(items[order[:11]], factors[order[:11]], values=values[order[:11]],
                     client_ids=order[:11])
    for u in order[11:]:
        two.submit(ValueReports(int(u), items[u], factors[u], values[u]).to_bytes())
    a, b = one.flush(), two.flush()
    assert a.to_bytes() == b.to_bytes()
    got = sorted(zip(a.items.tolist(), a.factors.tolist(), a.values.view(np.uint32).tolist(),
                     strict=True))
    want = sorted(zip(items.ravel().tolist(), factors.ravel().tolist(),
                      values.ravel().view(np.uint32).tolist(), strict=True))
    assert got == want  # bit for bit: -0.0 stays -0.0, the subnormal stays


@pytest.mark.parametrize("real_valued", [False, True])
def test_the_largest_items_and_factors_round_trip(real_valued):
    """Item 2^24 - 1 and factor 255: 64-bit codes for values, 33-bit for bits."""
    from dprec.protocol.messages import MAX_ITEMS

    items = np.array([[MAX_ITEMS - 1, 0, 3], [0, MAX_ITEMS - 1, 3]], np.int32)
    factors = np.array([[255, 0, 7], [255, 255, 0]], np.uint8)
    shuffler = Shuffler(2, np.random.default_rng(0))
    if real_valued:
        values = np.array([[-3.0e38, 3.0e38, -0.0], [1.0, -1.0, 0.0]], np.float32)
        shuffler.submit_batch(items, factors, values=values, client_ids=np.arange(2))
        low = values.ravel().view(np.uint32)
    else:
        bits = np.array([[1, 0, 1], [0, 1, 1]], np.uint8)
        shuffler.submit_batch(items, factors, bits, np.arange(2))
        low = bits.ravel()
    out = shuffler.flush()
    out_low = out.values.view(np.uint32) if real_valued else out.bits
    got = sorted(zip(out.items.tolist(), out.factors.tolist(), out_low.tolist(), strict=True))
    want = sorted(zip(items.ravel().tolist(), factors.ravel().tolist(), low.tolist(),
                      strict=True))
    assert got == want


@st.composite
def _round(draw):
    n_clients = draw(st.integers(1, 12))
    k = draw(st.integers(1, 4))
    shape = (n_clients, k)
    items = np.array(draw(st.lists(st.integers(0, 2**24 - 1) | st.integers(0, 3),
                                   min_size=n_clients * k, max_size=n_clients * k)),
                     np.int32).reshape(shape)
    factors = np.array(draw(st.lists(st.integers(0, 255) | st.integers(0, 2),
                                     min_size=n_clients * k, max_size=n_clients * k)),
                       np.uint8).reshape(shape)
    if draw(st.booleans()):
        low = np.array(draw(st.lists(st.integers(0, 1), min_size=n_clients * k,
                                     max_size=n_clients * k)), np.uint8).reshape(shape)
        return items, factors, low, None
    values = np.array(draw(st.lists(st.floats(width=32, allow_nan=False, allow_infinity=False)
                                    | st.sampled_from([0.0, -0.0, 1.0]),
                                    min_size=n_clients * k, max_size=n_clients * k)),
                      np.float32).reshape(shape)
    return items, factors, None, values


@settings(max_examples=60, deadline=None)
@given(_round(), st.randoms(use_true_random=False), st.data())
def test_forwarded_batch_depends_on_the_multiset_only(reports, random, data):
    """Any order of the clients, any split into batch submissions: the same bytes out."""
    items, factors, bits, values = reports
    n = items.shape[0]

    def forward(order, cuts):
        shuffler = Shuffler(1, np.random.default_rng(42))
        bounds = [0, *cuts, n]
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            rows = np.array(order[a:b], np.int64)
            if not rows.size:
                continue
            if bits is not None:
                shuffler.submit_batch(items[rows], factors[rows], bits[rows], rows)
            else:
                shuffler.submit_batch(items[rows], factors[rows], values=values[rows],
                                      client_ids=rows)
        return shuffler.flush().to_bytes()

    order = list(range(n))
    random.shuffle(order)
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=3)))
    assert forward(order, cuts) == forward(list(range(n)), [])
