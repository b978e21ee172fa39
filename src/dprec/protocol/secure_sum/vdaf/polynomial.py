"""Polynomials over an NTT field held by their values on the ``n``-th roots of unity
``x_i = w_n^i`` in natural order (the Lagrange basis of draft-irtf-cfrg-vdaf §7.3), as the
FLP's wire and gadget polynomials are.

- :func:`ntt` / :func:`intt`: coefficients <-> values (radix-2, one vector step per level,
  on every row of a 2-D array at once).
- :func:`lagrange_weights`: the row vector ``c`` with ``f(t) = c . (f(x_0), ..., f(x_{n-1}))``
  for every ``f`` of degree ``< n``: ``c_i = (t^n - 1) x_i / (n (t - x_i))`` (barycentric
  form; ``t`` must not be a root of unity).
- :func:`values_at`, :func:`evaluate_from_prefix`: a polynomial of degree ``< m`` given by
  its values at the first ``m`` of the ``n``-th roots (a gadget polynomial in a proof),
  evaluated at other roots or at the test point, by barycentric interpolation on those
  ``m`` nodes: with ``P_i = prod_{j >= m, j != i} (x_i - x_j)``, the node weights are
  ``x_i P_i / n`` and ``f(x_e) = sum_i x_i P_i f(x_i) / (x_e P_e (x_e - x_i))``. (The
  spec extends the values to all ``n`` roots first; the values needed are the same.)

Each returns the same field elements as the spec's reference algorithms: a polynomial's
values do not depend on how they are computed.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from dprec.protocol.secure_sum.vdaf.field import Field

__all__ = ["evaluate_from_prefix", "intt", "lagrange_weights", "next_power_of_2", "ntt",
           "values_at", "values_on_larger_domain"]


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
    k = min(next_power_of_2(max(a.shape[1], 1)), n)
    padded = field.zeros((a.shape[0], k))
    padded[:, :a.shape[1]] = a
    # zero-padded from k to n coefficients, the bit-reversed row is nonzero only at the
    # starts of its n/k-blocks, and the levels m <= n/k turn each block into that start's
    # value repeated: those levels are one repeat (a pruned NTT; the same values)
    spread = np.repeat(padded[:, _bit_reversal(k)], n // k, axis=1)
    a = field.butterflies(spread, n, 2 * (n // k))
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
def _prefix_weights(field: type[Field], m: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``n``-th roots ``x`` and ``x_i P_i`` for ``i < m``, ``P_i = prod_{j >= m}
    (x_i - x_j)``: the barycentric weights of the first ``m`` roots, times ``n``."""
    x = field.powers(field.root(n), n)
    return x, field.mul(x[:m], field.prod_differences(x[:m], x[m:]))


def values_at(field: type[Field], values: np.ndarray, n: int, indices: np.ndarray
              ) -> np.ndarray:
    """``f(x_e)`` for the given indices ``e < n``, ``f`` of degree ``< m = len(values)`` given
    by its values at ``x_0, ..., x_{m-1}``: read where ``e < m``, else
    ``f(x_e) = sum_i x_i P_i / (x_e P_e (x_e - x_i)) f(x_i)`` (module docstring)."""
    m = len(values)
    indices = np.asarray(indices, dtype=np.int64)
    out = field.zeros(len(indices))
    inside = indices < m
    out[inside] = np.asarray(values)[indices[inside]]
    outside = indices[~inside]
    if len(outside):
        out[~inside] = field.matvec(_extension_rows(field, m, n, tuple(outside.tolist())),
                                    values)
    return out


@lru_cache(maxsize=64)
def _extension_rows(field: type[Field], m: int, n: int, rows: tuple[int, ...]) -> np.ndarray:
    x, weighted = _prefix_weights(field, m, n)
    e = np.asarray(rows, dtype=np.int64)
    xe = x[e]
    pe = field.mul(xe, field.prod_differences(xe, x[m:]))  # x_e P_e (j = e skipped)
    gap = field.sub(xe[:, None], x[None, :m])
    inv = field.inv(field.mul(gap, pe[:, None]).ravel()).reshape(gap.shape)
    return field.mul(inv, weighted[None, :])


def evaluate_from_prefix(field: type[Field], values: np.ndarray, n: int, t: int) -> int:
    """``f(t)`` for ``f`` as in :func:`values_at`: ``f(t) = (t^n - 1) / (n prod_{j >= m}
    (t - x_j)) sum_i x_i P_i f(x_i) / (t - x_i)``; at a root ``t = x_e`` (probability
    ``n / |F|``), ``f(x_e)``."""
    m, mod = len(values), field.MODULUS
    t = int(t) % mod
    if pow(t, n, mod) == 1:
        e = next(i for i in range(n) if pow(field.root(n), i, mod) == t)
        return int(values_at(field, values, n, np.array([e]))[0])
    x, weighted = _prefix_weights(field, m, n)
    tt = field.from_ints([t])
    terms = field.mul(field.mul(weighted, values), field.inv(field.sub(tt, x[:m])))
    total = int(field.sum(terms)[0])
    missing = int(field.prod_differences(tt, x[m:])[0])
    scale = (pow(t, n, mod) - 1) * pow(n * missing % mod, mod - 2, mod)
    return total * scale % mod
