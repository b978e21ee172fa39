"""secure_sum.published.hex_key: a published or operator-given key is exact hex or refused."""

from __future__ import annotations

import pytest

from dprec.errors import DprecError
from dprec.protocol.secure_sum.published import hex_key


def test_hex_of_the_right_length_is_the_key():
    assert hex_key("ab" * 32, 32, "no key") == bytes([0xAB]) * 32


@pytest.mark.parametrize("raw", ["ab" * 31, "ab" * 33, "zz" * 32, None, 7, b"\xab" * 32, ""])
def test_anything_else_is_refused_with_the_callers_words(raw):
    with pytest.raises(DprecError, match="^no 32-byte key$"):
        hex_key(raw, 32, "no 32-byte key")
