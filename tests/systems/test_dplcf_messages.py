"""DPLCF messages (ObfuscatedBits up, NeighbourLists down): framing, round trips, validation."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dprec.models.itemknn import top_k_neighbours
from dprec.protocol import messages
from dprec.protocol.messages import MAX_ITEMS, VERSION, Message, MessageError
from dprec.systems.dplcf.messages import NeighbourLists, ObfuscatedBits

finite32 = st.floats(width=32, allow_nan=False, allow_infinity=False)


def _patch(data: bytes, offset: int, new: bytes) -> bytes:
    return data[:offset] + new + data[offset + len(new):]


def test_the_dplcf_messages_live_with_the_system():
    assert ObfuscatedBits.__module__ == NeighbourLists.__module__ == "dprec.systems.dplcf.messages"
    assert not hasattr(messages, "ObfuscatedBits") and not hasattr(messages, "NeighbourLists")
    assert issubclass(ObfuscatedBits, Message) and issubclass(NeighbourLists, Message)


def test_dplcf_messages_carry_the_common_header():
    ob = ObfuscatedBits.pack(np.ones((2, 3), np.uint8)).to_bytes()
    nl = NeighbourLists([[1], [0]], [[0.5], [0.5]]).to_bytes()
    assert ob[:6] == b"DPRC" + bytes([VERSION, ObfuscatedBits.KIND])
    assert nl[:6] == b"DPRC" + bytes([VERSION, NeighbourLists.KIND])
    assert len({ObfuscatedBits.KIND, NeighbourLists.KIND, 1, 2, 3, 4, 5}) == 7


# -- ObfuscatedBits ---------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.uint8, hnp.array_shapes(min_dims=2, max_dims=2, min_side=0, max_side=30),
                  elements=st.integers(0, 1)))
def test_obfuscated_bits_round_trip(dense):
    msg = ObfuscatedBits.pack(dense)
    assert (msg.n_clients, msg.n_items) == dense.shape
    assert msg.packed.shape == (dense.shape[0], (dense.shape[1] + 7) // 8)
    raw = msg.to_bytes()
    assert len(raw) == msg.nbytes == 14 + msg.packed.size
    back = Message.from_bytes(raw)
    assert type(back) is ObfuscatedBits and back == msg
    np.testing.assert_array_equal(back.unpack(np.uint8), dense)
    assert back.unpack().dtype == np.float32


def test_obfuscated_bits_with_n_not_a_multiple_of_8():
    dense = np.array([[1] * 13, [0] * 12 + [1], [1] + [0] * 12], np.uint8)
    msg = ObfuscatedBits.from_bytes(ObfuscatedBits.pack(dense).to_bytes())
    assert msg.n_items == 13 and msg.packed.shape == (3, 2)
    np.testing.assert_array_equal(msg.unpack(np.uint8), dense)


def test_pack_treats_nonzero_as_one_and_keeps_the_packed_array():
    msg = ObfuscatedBits.pack(np.array([[2, 0, -1.5, 0]]))
    np.testing.assert_array_equal(msg.unpack(np.int64), [[1, 0, 1, 0]])
    packed = np.packbits(np.ones((4, 10), bool), axis=1)
    assert ObfuscatedBits(packed, 10).packed is packed  # validated without a copy


@pytest.mark.parametrize(
    "packed, n_items, match",
    [
        (np.zeros((2, 2), np.int64), 16, "dtype uint8"),
        (np.zeros((2, 2), np.uint8), 17, r"shape \(clients, 3\)"),
        (np.zeros((2, 2), np.uint8), 8, r"shape \(clients, 1\)"),
        (np.zeros(2, np.uint8), 16, "must be 2-D"),
        (np.zeros((2, 2), np.uint8), 16.0, "n_items must be an integer"),
        (np.zeros((2, 2), np.uint8), -1, "n_items must be in"),
        (np.zeros((1, (MAX_ITEMS + 8) // 8), np.uint8), MAX_ITEMS + 1, "n_items must be in"),
        (np.array([[0, 0b00000100]], np.uint8), 13, "padding bits"),
    ],
)
def test_bad_obfuscated_bits_are_rejected(packed, n_items, match):
    with pytest.raises(MessageError, match=match):
        ObfuscatedBits(packed, n_items)


def test_bad_obfuscated_bit_bytes_are_rejected():
    raw = ObfuscatedBits.pack(np.ones((3, 13), np.uint8)).to_bytes()
    for n in range(len(raw)):
        with pytest.raises(MessageError):
            ObfuscatedBits.from_bytes(raw[:n])
    with pytest.raises(MessageError, match="payload must be"):
        ObfuscatedBits.from_bytes(raw + b"\x00")
    with pytest.raises(MessageError, match="payload must be"):
        ObfuscatedBits.from_bytes(_patch(raw, 6, b"\xff\xff\xff\xff"))  # 2^32 - 1 clients
    with pytest.raises(MessageError, match="n_items must be in"):
        ObfuscatedBits.from_bytes(_patch(raw, 10, b"\xff\xff\xff\xff"))
    with pytest.raises(MessageError, match="padding bits"):
        ObfuscatedBits.from_bytes(raw[:-1] + b"\xff")
    with pytest.raises(MessageError, match="expected a ObfuscatedBits"):
        ObfuscatedBits.from_bytes(NeighbourLists([[0]], [[1.0]]).to_bytes())


# -- NeighbourLists ---------------------------------------------------------------------------


@st.composite
def neighbour_lists(draw, max_n=12, max_k=5):
    n = draw(st.integers(0, max_n))
    k = draw(st.integers(0, max_k))
    idx = draw(hnp.arrays(np.int32, (n, k), elements=st.integers(0, max(n - 1, 0))))
    sims = draw(hnp.arrays(np.float32, (n, k), elements=finite32))
    full = None
    if draw(st.booleans()):
        full = draw(hnp.arrays(np.float32, (n, n), elements=finite32))
    return idx, sims, full


@settings(max_examples=60, deadline=None)
@given(neighbour_lists())
def test_neighbour_lists_round_trip(parts):
    idx, sims, full = parts
    msg = NeighbourLists(idx, sims, full)
    raw = msg.to_bytes()
    assert len(raw) == msg.nbytes == 15 + 8 * idx.size + (0 if full is None else 4 * full.size)
    back = Message.from_bytes(raw)
    assert type(back) is NeighbourLists and back == msg
    assert (back.full is None) == (full is None)
    assert (back.n_items, back.k) == idx.shape
    assert back.indices.dtype == np.int32 and back.sims.dtype == np.float32


def test_server_output_is_accepted_with_and_without_full():
    sim = np.random.default_rng(0).random((9, 9)).astype(np.float32)
    idx, val = top_k_neighbours(sim, 4)
    with_full = NeighbourLists(idx, val, sim)
    assert with_full.full is sim  # the (possibly 400 MB) matrix is not copied
    assert with_full.indices is idx and with_full.sims is val
    without = NeighbourLists.from_bytes(NeighbourLists(idx, val).to_bytes())
    assert without.full is None and with_full.nbytes == without.nbytes + 4 * 81
    back = NeighbourLists.from_bytes(with_full.to_bytes())
    np.testing.assert_array_equal(back.full, sim)
    single = NeighbourLists(*top_k_neighbours(np.ones((1, 1), np.float32), 3))  # k = n - 1 = 0
    assert single.indices.shape == (1, 0)


def test_check_for():
    msg = NeighbourLists([[1], [0]], [[0.5], [0.5]])
    assert msg.check_for(2) is msg
    with pytest.raises(MessageError, match="client's 3 items, got 2"):
        msg.check_for(3)
    with pytest.raises(MessageError, match="needs the full similarity"):
        msg.check_for(2, need_full=True)
    NeighbourLists([[1], [0]], [[0.5], [0.5]], np.eye(2)).check_for(2, need_full=True)


@pytest.mark.parametrize(
    "indices, sims, full, match",
    [
        ([[1], [2]], [[0.5], [0.5]], None, r"indices must be in \[0, 1\]"),
        ([[1], [-1]], [[0.5], [0.5]], None, r"indices must be in \[0, 1\]"),
        ([[1.0], [0.0]], [[0.5], [0.5]], None, "indices must hold integers"),
        ([1, 0], [0.5, 0.5], None, "indices must be 2-D"),
        ([[1], [0]], [[0.5, 0.1], [0.5, 0.1]], None, r"shape of indices \(2, 1\)"),
        ([[1], [0]], [[np.nan], [0.5]], None, "sims must be finite"),
        ([[1], [0]], [["a"], ["b"]], None, "sims must hold real numbers"),
        ([[1], [0]], [[0.5], [0.5]], np.ones((2, 3)), r"full must have shape \(2, 2\)"),
        ([[1], [0]], [[0.5], [0.5]], np.array([[1, np.inf], [0, 1]]), "full must be finite"),
        ([[1], [0]], [[0.5], [0.5]], np.ones(4), "full must be 2-D"),
    ],
)
def test_bad_neighbour_lists_are_rejected(indices, sims, full, match):
    with pytest.raises(MessageError, match=match):
        NeighbourLists(np.asarray(indices), np.asarray(sims), full)


def test_bad_neighbour_list_bytes_are_rejected():
    msg = NeighbourLists([[1, 2], [0, 2], [0, 1]], np.full((3, 2), 0.5), np.eye(3))
    raw = msg.to_bytes()
    for n in range(len(raw)):
        with pytest.raises(MessageError):
            NeighbourLists.from_bytes(raw[:n])
    with pytest.raises(MessageError, match="payload must be"):
        NeighbourLists.from_bytes(raw + b"\x00")
    with pytest.raises(MessageError, match="has_full must be 0 or 1"):
        NeighbourLists.from_bytes(_patch(raw, 14, b"\x02"))
    with pytest.raises(MessageError, match="payload must be"):
        NeighbourLists.from_bytes(_patch(raw, 14, b"\x00"))  # full present but flag says not
    with pytest.raises(MessageError, match="payload must be"):
        NeighbourLists.from_bytes(_patch(raw, 6, b"\xff" * 8))  # N = K = 2^32 - 1
    out_of_range = np.array([3], "<i4").tobytes()
    with pytest.raises(MessageError, match="indices must be in"):
        NeighbourLists.from_bytes(_patch(raw, 15, out_of_range))
    nan = np.array([np.nan], "<f4").tobytes()
    with pytest.raises(MessageError, match="sims must be finite"):
        NeighbourLists.from_bytes(_patch(raw, 15 + 24, nan))
    with pytest.raises(MessageError, match="full must be finite"):
        NeighbourLists.from_bytes(_patch(raw, len(raw) - 4, nan))
