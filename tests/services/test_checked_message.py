"""One home for decoding a peer's message and checking it: 400 when the bytes do not
decode, 422 when the check refuses, the message when both pass."""

from __future__ import annotations

import pytest

from dprec.protocol.messages import MessageError, ShuffledReports
from dprec.services.http import ApiError, checked_message

_BATCH = ShuffledReports([3, 1], [0, 1], [1, 0])


def _accept(message):
    return None


def _refuse(message):
    raise MessageError("k does not match")


def test_a_message_that_passes_is_returned():
    message = checked_message(_BATCH.to_bytes(), "batch", _accept)
    assert isinstance(message, ShuffledReports) and message.to_bytes() == _BATCH.to_bytes()


@pytest.mark.parametrize("body", [b"", b"\x00\x01garbage", _BATCH.to_bytes()[:-2]])
def test_bytes_that_do_not_decode_are_400_and_never_checked(body):
    seen = []
    with pytest.raises(ApiError) as e:
        checked_message(body, "batch", seen.append)
    assert e.value.status == 400 and e.value.message.startswith("malformed batch: ")
    assert seen == []


def test_a_refused_message_is_422_with_the_reason():
    with pytest.raises(ApiError) as e:
        checked_message(_BATCH.to_bytes(), "message", _refuse)
    assert e.value.status == 422 and e.value.message == "message refused: k does not match"
