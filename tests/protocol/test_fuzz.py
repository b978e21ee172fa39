"""Fuzzing every decoder: malformed bytes raise MessageError, anything accepted round-trips.

Budget: each property runs ``EXAMPLES`` examples per message class (7 classes), with small
messages, so the whole file stays well under 20 s on one core.
"""

import struct

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dprec.protocol.messages import (
    MAX_ITEMS,
    VERSION,
    GradientReports,
    ItemMatrix,
    Message,
    MessageError,
    ShuffledReports,
    ShuffledValues,
    ValueReports,
)
from dprec.systems.dplcf.messages import NeighbourLists, ObfuscatedBits

EXAMPLES = 30
CLASSES = [
    GradientReports,
    ShuffledReports,
    ItemMatrix,
    ValueReports,
    ShuffledValues,
    ObfuscatedBits,
    NeighbourLists,
]
PARSERS = [Message, *CLASSES]
FIXED_SIZE = {  # bytes of fixed fields after the 6-byte header
    GradientReports: 12,
    ShuffledReports: 8,
    ItemMatrix: 16,
    ValueReports: 12,
    ShuffledValues: 8,
    ObfuscatedBits: 8,
    NeighbourLists: 9,
}
EXTREMES = [0, 1, 7, 8, 9, 2**24, 2**31 - 1, 2**31, 2**32 - 1, 2**63 - 1, 2**63, 2**64 - 1]

finite32 = st.floats(width=32, allow_nan=False, allow_infinity=False)
ids = st.integers(-(2**63), 2**63 - 1)


def _ints(dtype, shape, low, high):
    return hnp.arrays(dtype, shape, elements=st.integers(low, high))


@st.composite
def _reports(draw, cls):
    k = draw(st.integers(0, 20))
    items = draw(_ints(np.int32, k, 0, MAX_ITEMS - 1))
    factors = draw(_ints(np.uint8, k, 0, 255))
    if cls in (GradientReports, ShuffledReports):
        values = draw(_ints(np.uint8, k, 0, 1))
    else:
        values = draw(hnp.arrays(np.float32, k, elements=finite32))
    head = (draw(ids),) if cls in (GradientReports, ValueReports) else ()
    return cls(*head, items, factors, values)


@st.composite
def _item_matrix(draw):
    shape = draw(hnp.array_shapes(min_dims=2, max_dims=2, min_side=0, max_side=6))
    return ItemMatrix(draw(hnp.arrays(np.float32, shape, elements=finite32)), draw(ids))


@st.composite
def _obfuscated_bits(draw):
    dense = draw(_ints(np.uint8, (draw(st.integers(0, 5)), draw(st.integers(0, 20))), 0, 1))
    return ObfuscatedBits.pack(dense)


@st.composite
def _neighbour_lists(draw):
    n, k = draw(st.integers(0, 6)), draw(st.integers(0, 3))
    idx = draw(_ints(np.int32, (n, k), 0, max(n - 1, 0)))
    sims = draw(hnp.arrays(np.float32, (n, k), elements=finite32))
    full = draw(st.none() | hnp.arrays(np.float32, (n, n), elements=finite32))
    return NeighbourLists(idx, sims, full)


def messages_of(cls):
    if cls is ItemMatrix:
        return _item_matrix()
    if cls is ObfuscatedBits:
        return _obfuscated_bits()
    if cls is NeighbourLists:
        return _neighbour_lists()
    return _reports(cls)


def parse_or_refuse(parser, data: bytes) -> Message | None:
    """The decoder contract: a message that re-serialises to ``data``, or MessageError.

    Any other exception (struct.error, ValueError, OverflowError, MemoryError) propagates
    and fails the test.
    """
    try:
        msg = parser.from_bytes(data)
    except MessageError:
        return None
    assert msg.to_bytes() == data
    assert msg.nbytes == len(data)
    assert type(msg).from_bytes(data) == msg
    assert_valid(msg)
    return msg


def assert_valid(msg: Message) -> None:
    """What a receiver may rely on, checked independently of the decoders."""
    if isinstance(msg, (GradientReports, ShuffledReports, ValueReports, ShuffledValues)):
        assert msg.items.dtype == np.int32 and msg.factors.dtype == np.uint8
        assert msg.items.shape == msg.factors.shape == (msg.k,)
        assert np.all((msg.items >= 0) & (msg.items < MAX_ITEMS))
        if isinstance(msg, (GradientReports, ShuffledReports)):
            assert msg.bits.dtype == np.uint8 and np.all(msg.bits <= 1)
        else:
            assert msg.values.dtype == np.float32 and np.isfinite(msg.values).all()
    elif isinstance(msg, ItemMatrix):
        assert msg.matrix.dtype == np.float32 and np.isfinite(msg.matrix).all()
        assert msg.matrix.ndim == 2 and msg.matrix.shape[0] <= MAX_ITEMS
    elif isinstance(msg, ObfuscatedBits):
        assert msg.packed.dtype == np.uint8 and msg.n_items <= MAX_ITEMS
        assert msg.packed.shape == (msg.n_clients, (msg.n_items + 7) // 8)
        assert np.array_equal(np.packbits(msg.unpack(np.uint8), axis=1), msg.packed)  # padding 0
    else:
        assert isinstance(msg, NeighbourLists)
        n = msg.n_items
        assert msg.indices.dtype == np.int32 and msg.sims.dtype == np.float32
        assert msg.sims.shape == msg.indices.shape and msg.indices.shape[0] == n
        assert np.all((msg.indices >= 0) & (msg.indices < n))
        assert np.isfinite(msg.sims).all()
        if msg.full is not None:
            assert msg.full.shape == (n, n) and np.isfinite(msg.full).all()


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_valid_messages_round_trip(cls, data):
    msg = data.draw(messages_of(cls))
    raw = msg.to_bytes()
    assert parse_or_refuse(cls, raw) == msg
    assert parse_or_refuse(Message, raw) == msg
    for other in CLASSES:
        if other is not cls:
            with pytest.raises(MessageError, match="expected a"):
                other.from_bytes(raw)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_random_payloads_under_a_valid_header(cls, data):
    payload = data.draw(st.binary(max_size=120))
    raw = b"DPRC" + bytes([VERSION, cls.KIND]) + payload
    for parser in PARSERS:
        parse_or_refuse(parser, raw)


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.binary(max_size=64))
def test_random_bytes(raw):
    for parser in PARSERS:
        parse_or_refuse(parser, raw)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
@settings(max_examples=EXAMPLES // 2, deadline=None)
@given(data=st.data())
def test_truncated_or_extended_messages_are_refused(cls, data):
    raw = data.draw(messages_of(cls)).to_bytes()
    for n in range(len(raw)):
        with pytest.raises(MessageError):
            Message.from_bytes(raw[:n])
        with pytest.raises(MessageError):
            cls.from_bytes(raw[:n])
    extra = data.draw(st.binary(min_size=1, max_size=16))
    with pytest.raises(MessageError):
        cls.from_bytes(raw + extra)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_bit_flips(cls, data):
    raw = bytearray(data.draw(messages_of(cls)).to_bytes())
    n_bits = 8 * len(raw)
    anywhere = st.integers(0, n_bits - 1)
    payload = st.integers(48, n_bits - 1)  # past the header
    tail = st.integers(max(48, n_bits - 16), n_bits - 1)  # padding bits live at the end
    flips = data.draw(st.lists(anywhere | payload | tail, min_size=1, max_size=4))
    for bit in flips:
        raw[bit // 8] ^= 1 << (bit % 8)
    mutated = bytes(raw)
    for parser in PARSERS:
        parse_or_refuse(parser, mutated)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_mutated_length_fields(cls, data):
    raw = data.draw(messages_of(cls)).to_bytes()
    size = FIXED_SIZE[cls]
    width = data.draw(st.sampled_from([w for w in (1, 4, 8) if w <= size]))
    offset = 6 + data.draw(st.integers(0, size - width))
    value = data.draw(st.sampled_from(EXTREMES) | st.integers(0, 2**64 - 1)) % (1 << 8 * width)
    mutated = raw[:offset] + value.to_bytes(width, "little") + raw[offset + width:]
    assume(mutated != raw)
    for parser in (Message, cls):
        parse_or_refuse(parser, mutated)


SPECIAL_WORDS = [np.array([x], "<f4").tobytes() for x in (np.nan, np.inf, -np.inf)] + [
    v.to_bytes(4, "little") for v in (2**24, 2**31 - 1, 2**31, 2**32 - 1)
]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_special_words_in_the_arrays(cls, data):
    """NaN, inf, out-of-range indices written over a 4-byte word of the payload."""
    raw = data.draw(messages_of(cls)).to_bytes()
    start = 6 + FIXED_SIZE[cls]
    assume(len(raw) >= start + 4)
    offset = data.draw(st.integers(start, len(raw) - 4))
    word = data.draw(st.sampled_from(SPECIAL_WORDS))
    mutated = raw[:offset] + word + raw[offset + 4:]
    assume(mutated != raw)
    for parser in (Message, cls):
        parse_or_refuse(parser, mutated)


def test_fixed_sizes_match_the_encoders():
    """Guards FIXED_SIZE, which the length-field mutations rely on."""
    empty = {
        GradientReports: GradientReports(0, [], [], []),
        ShuffledReports: ShuffledReports([], [], []),
        ItemMatrix: ItemMatrix(np.zeros((0, 0))),
        ValueReports: ValueReports(0, [], [], []),
        ShuffledValues: ShuffledValues([], [], []),
        ObfuscatedBits: ObfuscatedBits(np.zeros((0, 0), np.uint8), 0),
        NeighbourLists: NeighbourLists(np.zeros((0, 0), np.int32), np.zeros((0, 0))),
    }
    for cls, msg in empty.items():
        assert len(msg.to_bytes()) == 6 + FIXED_SIZE[cls], cls
    assert struct.calcsize("<4sBB") == 6
