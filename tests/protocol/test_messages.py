"""Protocol messages: byte round trips, sizes, and rejection of bad input."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dprec.errors import DprecError
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


@st.composite
def reports(draw, max_k=300):
    k = draw(st.integers(0, max_k))
    items = draw(hnp.arrays(np.int32, k, elements=st.integers(0, MAX_ITEMS - 1)))
    factors = draw(hnp.arrays(np.uint8, k))
    bits = draw(hnp.arrays(np.bool_, k))
    return items, factors, bits


@settings(max_examples=60, deadline=None)
@given(st.integers(-(2**63), 2**63 - 1), reports())
def test_gradient_reports_round_trip(client_id, rep):
    msg = GradientReports(client_id, *rep)
    data = msg.to_bytes()
    assert isinstance(data, bytes)
    assert len(data) == msg.nbytes == GradientReports.serialized_size(msg.k)
    back = GradientReports.from_bytes(data)
    assert back == msg
    assert back.client_id == client_id
    np.testing.assert_array_equal(back.bits, rep[2].astype(np.uint8))
    assert Message.from_bytes(data) == msg  # dispatch on the kind byte


@settings(max_examples=60, deadline=None)
@given(reports(max_k=2000))
def test_shuffled_reports_round_trip(rep):
    msg = ShuffledReports(*rep)
    data = msg.to_bytes()
    assert len(data) == msg.nbytes == ShuffledReports.serialized_size(len(msg))
    assert ShuffledReports.from_bytes(bytearray(data)) == msg
    assert not hasattr(msg, "client_id")


@settings(max_examples=40, deadline=None)
@given(
    hnp.arrays(
        np.float32,
        hnp.array_shapes(min_dims=2, max_dims=2, min_side=0, max_side=40),
        elements=st.floats(allow_nan=False, allow_infinity=False, width=32),
    ),
    st.integers(0, 10**6),
)
def test_item_matrix_round_trip(matrix, epoch):
    msg = ItemMatrix(matrix, epoch)
    data = msg.to_bytes()
    assert len(data) == msg.nbytes
    back = ItemMatrix.from_bytes(memoryview(data))
    assert back == msg and back.epoch == epoch
    assert back.matrix.dtype == np.float32 and back.matrix.shape == matrix.shape


def test_sizes_match_the_paper_accounting():
    # upload: 4-byte index + 1 byte factor + 1 bit per report (+ 18 bytes of framing)
    assert GradientReports.serialized_size(100) == 100 * 4 + 13 + 6 + 12  # paper: 4k bytes
    # download: ~0.2 MB for 9,781 items x 5 factors
    assert ItemMatrix.serialized_size(9781, 5) == pytest.approx(0.2e6, rel=0.03)


def test_equality_compares_contents():
    a = GradientReports(1, [1, 2], [0, 1], [1, 0])
    assert a == GradientReports(1, np.array([1, 2]), [0, 1], [True, False])
    assert a != GradientReports(2, [1, 2], [0, 1], [1, 0])
    assert a != GradientReports(1, [1, 3], [0, 1], [1, 0])
    assert a != ShuffledReports([1, 2], [0, 1], [1, 0])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"bits": [0, 2]}, "bits must be in \\[0, 1\\]"),
        ({"factors": [0, 256]}, "factors must be in \\[0, 255\\]"),
        ({"items": [-1, 0]}, "items must be in"),
        ({"items": [0]}, "same length"),
        ({"items": [0.5, 1.0]}, "must hold integers"),
        ({"items": [[0, 1]]}, "must be 1-D"),
    ],
)
def test_bad_reports_are_rejected(kwargs, match):
    fields = {"items": [0, 1], "factors": [0, 1], "bits": [0, 1]} | kwargs
    with pytest.raises(MessageError, match=match):
        GradientReports(0, **fields)


def test_bad_bytes_are_rejected():
    data = GradientReports(3, [1, 2, 3], [0, 1, 2], [1, 1, 0]).to_bytes()
    with pytest.raises(MessageError, match="must start with"):
        Message.from_bytes(b"XXXX" + data[4:])
    with pytest.raises(MessageError, match=f"version must be {VERSION}"):
        Message.from_bytes(data[:4] + b"\x09" + data[5:])
    with pytest.raises(MessageError, match="unknown message kind"):
        Message.from_bytes(data[:5] + b"\x63" + data[6:])
    with pytest.raises(MessageError, match="expected a ShuffledReports"):
        ShuffledReports.from_bytes(data)
    with pytest.raises(MessageError, match="payload must be"):
        GradientReports.from_bytes(data[:-1])
    with pytest.raises(MessageError, match="payload must be"):
        GradientReports.from_bytes(data + b"\x00")
    with pytest.raises(MessageError, match=">= 6 bytes"):
        Message.from_bytes(b"DPR")
    m = ItemMatrix(np.ones((3, 2)), 1).to_bytes()
    with pytest.raises(MessageError, match="payload must be 24 bytes"):
        ItemMatrix.from_bytes(m[:-4])


def test_item_matrix_validation():
    with pytest.raises(MessageError, match="must be 2-D"):
        ItemMatrix(np.ones(3))
    with pytest.raises(MessageError, match="must be finite"):
        ItemMatrix(np.array([[np.nan]]))


def test_items_beyond_the_24_bit_index_are_refused():
    with pytest.raises(MessageError, match="items must be in"):
        GradientReports(0, [MAX_ITEMS], [0], [1])


@settings(max_examples=40, deadline=None)
@given(
    st.integers(-(2**63), 2**63 - 1),
    reports(max_k=200),
    st.data(),
)
def test_value_reports_round_trip(client_id, rep, data):
    items, factors, _ = rep
    values = data.draw(
        hnp.arrays(np.float32, items.size, elements=st.floats(width=32, allow_nan=False,
                                                              allow_infinity=False))
    )
    msg = ValueReports(client_id, items, factors, values)
    raw = msg.to_bytes()
    assert len(raw) == msg.nbytes == ValueReports.serialized_size(msg.k) == 18 + 8 * msg.k
    back = Message.from_bytes(raw)
    assert type(back) is ValueReports and back == msg and back.client_id == client_id
    np.testing.assert_array_equal(back.values.view(np.uint32), values.view(np.uint32))
    batch = ShuffledValues(items, factors, values)
    assert ShuffledValues.from_bytes(batch.to_bytes()) == batch
    assert len(batch) == batch.k == msg.k and batch.nbytes == 14 + 8 * msg.k


def test_report_classes_share_len_and_k():
    g = GradientReports(1, [1, 2, 3], [0, 0, 0], [1, 0, 1])
    s = ShuffledReports([1, 2], [0, 0], [1, 0])
    assert (len(g), g.k, len(s), s.k) == (3, 3, 2, 2)


def test_gradient_report_byte_layout_is_unchanged():
    """Results report these byte counts: 6 header + 12 fixed + 4k index + ceil(k/8) bits."""
    assert GradientReports.serialized_size(100) == 431
    assert ShuffledReports.serialized_size(100) == 427
    msg = GradientReports(7, [1, 2**24 - 1], [3, 255], [1, 0])
    assert msg.to_bytes() == (
        b"DPRC" + bytes([VERSION, 1]) + (7).to_bytes(8, "little") + (2).to_bytes(4, "little")
        + (1 << 8 | 3).to_bytes(4, "little") + ((2**24 - 1) << 8 | 255).to_bytes(4, "little")
        + b"\x80"
    )


def test_message_error_is_the_one_error_class():
    assert issubclass(MessageError, DprecError)
    with pytest.raises(MessageError):
        ShuffledValues([0], [0], [np.nan])
    with pytest.raises(MessageError):
        ItemMatrix(np.ones((2, 2)), epoch=1.5)


@pytest.mark.parametrize("client_id", [1.5, 2.0, "3", None, True, 2**63, -(2**63) - 1])
@pytest.mark.parametrize("cls", [GradientReports, ValueReports])
def test_client_ids_must_be_int64_integers(cls, client_id):
    with pytest.raises(MessageError, match="client_id must be"):
        cls(client_id, [1], [0], [1])


def test_numpy_integer_ids_are_accepted():
    assert GradientReports(np.int64(5), [1], [0], [1]).client_id == 5
    assert type(GradientReports(np.uint8(5), [1], [0], [1]).client_id) is int


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"values": [0.0, np.inf]}, "values must be finite"),
        ({"values": [0.0, 1e39]}, "values must be finite"),  # overflows float32
        ({"values": [1j, 0]}, "must hold real numbers"),
        ({"values": ["a", "b"]}, "must hold real numbers"),
        ({"values": [[0.0, 1.0]]}, "values must be 1-D"),
        ({"values": [0.0]}, "same length"),
        ({"items": [[0], [1, 2]]}, "items must be an array"),
        ({"items": None}, "items must be 1-D"),
    ],
)
def test_bad_value_reports_are_rejected(kwargs, match):
    fields = {"items": [0, 1], "factors": [0, 1], "values": [0.5, -0.5]} | kwargs
    with pytest.raises(MessageError, match=match):
        ValueReports(0, **fields)


def test_truncated_value_reports_raise_message_error():
    """Regression: a 6-byte header alone used to raise struct.error."""
    data = ValueReports(3, [1, 2], [0, 1], [0.5, 1.5]).to_bytes()
    with pytest.raises(MessageError, match="truncated"):
        ValueReports.from_bytes(data[:6])
    for n in range(len(data)):
        with pytest.raises(MessageError):
            Message.from_bytes(data[:n])
    with pytest.raises(MessageError, match="payload must be"):
        ValueReports.from_bytes(data + b"\x00")


def _patch(data: bytes, offset: int, new: bytes) -> bytes:
    return data[:offset] + new + data[offset + len(new):]


def test_oversized_length_fields_are_refused_before_allocating():
    g = GradientReports(3, [1, 2, 3], [0, 1, 2], [1, 1, 0]).to_bytes()
    with pytest.raises(MessageError, match="payload must be"):
        GradientReports.from_bytes(_patch(g, 14, b"\xff" * 4))  # k = 2^32 - 1
    s = ShuffledValues([1], [0], [0.5]).to_bytes()
    with pytest.raises(MessageError, match="payload must be"):
        ShuffledValues.from_bytes(_patch(s, 6, b"\xff" * 8))  # m = 2^64 - 1
    m = ItemMatrix(np.ones((3, 2))).to_bytes()
    with pytest.raises(MessageError, match="payload must be"):
        ItemMatrix.from_bytes(_patch(m, 14, b"\xff" * 8))  # n = f = 2^32 - 1


def test_content_out_of_range_in_bytes_is_refused():
    v = ValueReports(3, [1], [0], [0.5]).to_bytes()
    nan = np.array([np.nan], "<f4").tobytes()
    with pytest.raises(MessageError, match="values must be finite"):
        ValueReports.from_bytes(_patch(v, len(v) - 4, nan))
    m = ItemMatrix(np.ones((1, 2))).to_bytes()
    inf = np.array([np.inf], "<f4").tobytes()
    with pytest.raises(MessageError, match="matrix must be finite"):
        ItemMatrix.from_bytes(_patch(m, len(m) - 4, inf))
    g = GradientReports(3, [1, 2, 3], [0, 1, 2], [1, 1, 0]).to_bytes()
    assert g[-1] == 0b11000000
    with pytest.raises(MessageError, match="padding bits"):
        GradientReports.from_bytes(g[:-1] + bytes([0b11000001]))
    with pytest.raises(MessageError, match="n_items"):
        ItemMatrix(np.zeros((MAX_ITEMS + 1, 0)))
    empty = ItemMatrix(np.zeros((0, 0))).to_bytes()  # n x 0 needs no body: n alone is checked
    assert ItemMatrix.from_bytes(_patch(empty, 14, MAX_ITEMS.to_bytes(4, "little"))).matrix.shape \
        == (MAX_ITEMS, 0)
    with pytest.raises(MessageError, match="n_items"):
        ItemMatrix.from_bytes(_patch(empty, 14, (MAX_ITEMS + 1).to_bytes(4, "little")))


def test_item_matrix_check_for():
    m = ItemMatrix(np.ones((3, 2)), 4)
    assert m.check_for(3, 2) is m
    with pytest.raises(MessageError, match=r"must be \(4, 2\)"):
        m.check_for(4, 2)


def test_bytes_like_inputs_only():
    with pytest.raises(MessageError, match="contiguous bytes"):
        Message.from_bytes("DPRC")  # type: ignore[arg-type]
    data = GradientReports(1, [1], [0], [1]).to_bytes()
    assert Message.from_bytes(np.frombuffer(data, np.uint8)) == GradientReports(1, [1], [0], [1])
