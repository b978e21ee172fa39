"""Field64's numba kernels and Field128 against Python's exact integers; the polynomial
helpers against direct evaluation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dprec.protocol.secure_sum.errors import MalformedUploadError
from dprec.protocol.secure_sum.vdaf import polynomial as poly
from dprec.protocol.secure_sum.vdaf.field import Field64, Field128

FIELDS = [Field64, Field128]


def draws(field, n, seed):
    rng = np.random.default_rng(seed)
    edge = [0, 1, 2, field.MODULUS - 1, field.MODULUS - 2, 2**32, 2**32 - 1, 2**63]
    return edge + [int(x) % field.MODULUS for x in rng.integers(0, 2**63, n)] + \
        [(int(a) << 64 | int(b)) % field.MODULUS for a, b in rng.integers(0, 2**63, (n, 2))]


@pytest.mark.parametrize("field", FIELDS)
def test_arithmetic_matches_python_integers(field) -> None:
    m = field.MODULUS
    a, b = draws(field, 500, 1), draws(field, 500, 2)
    xa, xb = field.from_ints(a), field.from_ints(b)
    assert field.to_ints(field.mul(xa, xb)) == [x * y % m for x, y in zip(a, b, strict=True)]
    assert field.to_ints(field.add(xa, xb)) == [(x + y) % m for x, y in zip(a, b, strict=True)]
    assert field.to_ints(field.sub(xa, xb)) == [(x - y) % m for x, y in zip(a, b, strict=True)]
    nonzero = [x for x in a if x]
    inv = field.inv(field.from_ints(nonzero))
    assert field.to_ints(field.mul(inv, field.from_ints(nonzero))) == [1] * len(nonzero)
    rows = field.from_ints(a[:400]).reshape(20, 20)
    sums = [sum(a[20 * i:20 * i + 20]) % m for i in range(20)]
    assert field.to_ints(field.sum_rows(rows)) == sums
    vec = field.from_ints(b[:20])
    dots = [sum(x * y for x, y in zip(a[20 * i:20 * i + 20], b[:20], strict=True)) % m
            for i in range(20)]
    assert field.to_ints(field.matvec(rows, vec)) == dots


@pytest.mark.parametrize("field", FIELDS)
def test_encoding_round_trip_and_refusals(field) -> None:
    x = field.from_ints(draws(field, 50, 3))
    assert field.to_ints(field.decode(field.encode(x))) == field.to_ints(x)
    with pytest.raises(MalformedUploadError):
        field.decode(b"\x00" * (field.ENCODED_SIZE + 1))
    with pytest.raises(MalformedUploadError):
        field.decode(b"\xff" * field.ENCODED_SIZE)  # 2^(8 size) - 1 >= p


def test_signed_integers_and_centred_lift() -> None:
    y = np.array([-5, 0, 7, -(2**40)], dtype=np.int64)
    x = Field64.from_ints(y)
    assert Field64.to_ints(x)[0] == Field64.MODULUS - 5
    assert np.array_equal(Field64.centred(x), y)


@pytest.mark.parametrize("field", FIELDS)
def test_roots_of_unity(field) -> None:
    w = field.root(16)
    assert pow(w, 16, field.MODULUS) == 1 and pow(w, 8, field.MODULUS) == field.MODULUS - 1
    assert pow(field.root(32), 2, field.MODULUS) == w


@pytest.mark.parametrize("field", FIELDS)
def test_ntt_interpolation_and_evaluation(field) -> None:
    m = field.MODULUS
    coeffs = draws(field, 3, 4)[:11]
    n = 16
    w = field.root(n)
    values = [sum(c * pow(w, i * j, m) for j, c in enumerate(coeffs)) % m for i in range(n)]
    assert field.to_ints(poly.ntt(field, field.from_ints(coeffs), n)) == values
    assert field.to_ints(poly.intt(field, field.from_ints(values))) == coeffs + [0] * 5
    t = 123456789
    f_t = sum(c * pow(t, j, m) for j, c in enumerate(coeffs)) % m
    weights = poly.lagrange_weights(field, t, n)
    assert field.to_ints(field.matvec(weights.reshape(1, -1), field.from_ints(values))) == [f_t]
    # values at the first 11 roots determine the rest (degree 10 < 11), and f(t)
    prefix = field.from_ints(values[:11])
    assert field.to_ints(poly.values_at(field, prefix, n, np.arange(n))) == values
    assert poly.evaluate_from_prefix(field, prefix, n, t) == f_t
    assert poly.evaluate_from_prefix(field, prefix, n, pow(w, 13, m)) == values[13]


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("count,n", [(1, 8), (3, 64), (5, 64), (16, 64), (17, 64), (64, 64)])
def test_ntt_of_few_coefficients_on_many_points(field, count, n) -> None:
    """The pruned NTT (``count`` coefficients padded to ``n`` points: the low levels are a
    repeat) gives every row's direct evaluation at the n-th roots."""
    m, w = field.MODULUS, field.root(n)
    rows = [draws(field, 40, 10 + r)[r:r + count] for r in range(3)]
    values = [[sum(c * pow(w, i * j, m) for j, c in enumerate(row)) % m for i in range(n)]
              for row in rows]
    got = poly.ntt(field, np.stack([field.from_ints(r) for r in rows]), n)
    assert [field.to_ints(g) for g in got] == values


@pytest.mark.parametrize("low,high", [(-15, 16), (-16, 17), (0, 28), (0, 1), (2, 2), (-5, 0)])
def test_paired_weighted_range_kernel_matches_the_plain_product(low, high) -> None:
    """Field64's kernel pairs k with low + high - k; the generic method multiplies every
    factor: both are x0 * prod_{k=low}^{high} (x1 - k)."""
    x1 = Field64.from_ints(list(range(low - 3, high + 4)))
    x0 = Field64.from_ints([7 * i + 3 for i in range(len(x1))])
    expected = [a * math.prod(b - k for k in range(low, high + 1)) % Field64.MODULUS
                for a, b in zip(Field64.to_ints(x0), range(low - 3, high + 4), strict=True)]
    assert Field64.to_ints(Field64.weighted_range(x0, x1, low, high)) == expected
