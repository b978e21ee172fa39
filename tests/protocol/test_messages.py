"""Protocol messages: byte round trips, sizes, and rejection of bad input."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dprec.errors import DprecError
from dprec.protocol.messages import (
    MAX_ITEMS,
    GradientReports,
    ItemMatrix,
    Message,
    MessageError,
    ShuffledReports,
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
    with pytest.raises(DprecError, match=match):
        GradientReports(0, **fields)


def test_bad_bytes_are_rejected():
    data = GradientReports(3, [1, 2, 3], [0, 1, 2], [1, 1, 0]).to_bytes()
    with pytest.raises(MessageError, match="must start with"):
        Message.from_bytes(b"XXXX" + data[4:])
    with pytest.raises(MessageError, match="version must be 1"):
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
    with pytest.raises(MessageError, match="body must be 24 bytes"):
        ItemMatrix.from_bytes(m[:-4])


def test_item_matrix_validation():
    with pytest.raises(DprecError, match="must be 2-D"):
        ItemMatrix(np.ones(3))
    with pytest.raises(DprecError, match="must be finite"):
        ItemMatrix(np.array([[np.nan]]))


def test_items_beyond_the_24_bit_index_are_refused():
    with pytest.raises(DprecError, match="items must be in"):
        GradientReports(0, [MAX_ITEMS], [0], [1])
