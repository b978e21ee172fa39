"""Polynomials over an NTT field held by their values on the ``n``-th roots of unity
``x_i = w_n^i`` in natural order (the Lagrange basis of draft-irtf-cfrg-vdaf §7.3), as the
FLP's wire and gadget polynomials are.

- :func:`ntt` / :func:`intt`: coefficients <-> values (radix-2, one vector step per level,
  on every row of a 2-D array at once).
- :func:`lagrange_weights`: the row vector ``c`` with ``f(t) = c . (f(x_0), ..., f(x_{n-1}))``
  for every ``f`` of degree ``< n``: ``c_i = (t^n - 1) x_i / (n (t - x_i))`` (barycentric
  form; ``t`` must not be a root of unity).
- :func:`extension_matrix`: ``E`` with ``E v`` = the values at ``x_k``, ``k >= m``, of the
  polynomial of degree ``< m`` given by its values ``v`` at ``x_0, ..., x_{m-1}`` (the
  spec's ``extend_values_to_power_of_2``), ``E[e, i] = x_i P_i / (x_e P_e (x_e - x_i))``
  with ``P_i = prod_{j >= m, j != i} (x_i - x_j)``.

Each returns the same field elements as the spec's reference algorithms: a polynomial's
values do not depend on how they are computed.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from dprec.protocol.secure_sum.vdaf.field import Field

__all__ = ["extend_values", "intt", "lagrange_weights", "next_power_of_2", "ntt",
           "values_on_larger_domain"]


def next_power_of_2(n: int) -> int:
    """The smallest power of two ``>= n`` (``n >= 1``)."""
    return 1 << (int(n) - 1).bit_length()


@lru_cache(maxsize=64)
def _bit_reversal(n: int) -> np.ndarray:
    bits = n.bit_length() - 1
    idx = np.arange(n)
    rev = np.zeros(n, dtype=np.int64)
    for b in range(bits):
        rev |= ((idx >> b) & 1) << (bits - 1 - b)
    return rev


def ntt(field: type[Field], coeffs: np.ndarray, n: int) -> np.ndarray:
    """Values at ``w_n^0, ..., w_n^(n-1)`` of the polynomials whose coefficients (lowest
    first, at most ``n``) are the rows of ``coeffs`` (a 1-D array is one row)."""
    a = np.asarray(coeffs)
    single = a.ndim == 1
    a = a.reshape(1, -1) if single else a
    if a.shape[1] > n:
        raise ValueError(f"{a.shape[1]} coefficients do not fit {n} points")
    padded = field.zeros((a.shape[0], n))
    padded[:, :a.shape[1]] = a
    a = field.butterflies(padded[:, _bit_reversal(n)], n)
    return a[0] if single else a


def intt(field: type[Field], values: np.ndarray) -> np.ndarray:
    """Coefficients of the polynomials (degree ``< n``) with the given values on the
    ``n``-th roots of unity, ``n`` the row length."""
    a = np.asarray(values)
    n = a.shape[-1]
    out = ntt(field, a, n)
    order = (-np.arange(n)) % n  # w^-i = w^(n - i)
    inv_n = field.from_ints([pow(n, field.MODULUS - 2, field.MODULUS)])
    return field.mul(out[..., order], inv_n)


def values_on_larger_domain(field: type[Field], values: np.ndarray, n: int) -> np.ndarray:
    """Values on the ``n``-th roots of unity of the polynomials given by their values on the
    ``len``-th roots (``len <= n``, both powers of two)."""
    return ntt(field, intt(field, values), n)


def lagrange_weights(field: type[Field], t: int, n: int) -> np.ndarray:
    """``c`` (module docstring): ``f(t) = sum_i c_i f(x_i)`` for ``deg f < n``."""
    x = field.powers(field.root(n), n)
    tt = field.from_ints([t])
    scale = (pow(int(t), n, field.MODULUS) - 1) * pow(n, field.MODULUS - 2, field.MODULUS)
    c = field.mul(x, field.inv(field.sub(tt, x)))
    return field.mul(c, field.from_ints([scale % field.MODULUS]))


@lru_cache(maxsize=32)
def extension_matrix(field: type[Field], m: int, n: int) -> np.ndarray:
    """``E`` (module docstring), shape ``(n - m, m)``."""
    x = field.powers(field.root(n), n)
    tail = x[m:]
    diff = field.sub(x[:, None], tail[None, :])  # (n, n - m): x_i - x_j, j >= m
    idx = np.arange(m, n)
    diff[idx, idx - m] = field.from_ints([1])[0]  # skip j == i
    p = field.prod_rows(diff)
    num = field.mul(x[:m], p[:m])  # x_i P_i, i < m
    den_e = field.mul(tail, p[m:])  # x_e P_e, e >= m
    gap = field.sub(tail[:, None], x[None, :m])  # x_e - x_i
    inv_den = field.inv(field.mul(gap, den_e[:, None]).ravel()).reshape(gap.shape)
    return field.mul(inv_den, num[None, :])


def extend_values(field: type[Field], values: np.ndarray, n: int) -> np.ndarray:
    """The values at all ``n``-th roots of the polynomial of degree ``< len(values)`` given
    by its values at the first ``len(values)`` of them."""
    m = len(values)
    if m == n:
        return np.asarray(values)
    rest = field.matvec(extension_matrix(field, m, n), values)
    return np.concatenate([values, rest])
