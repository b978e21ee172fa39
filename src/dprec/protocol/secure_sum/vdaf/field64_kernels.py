"""numba kernels for Field64, ``p = 2^64 - 2^32 + 1`` (draft-irtf-cfrg-vdaf §6.1.2), on
``uint64`` arrays: add, sub, mul, sums, products, batched inversion and a matrix-vector
product, each a compiled loop (no Python loop per element).

Multiplication forms the 128-bit product from 32-bit limbs and reduces it with
``2^64 = 2^32 - 1 (mod p)`` and ``2^96 = -1 (mod p)``: for ``x = lo + 2^64 (h0 + 2^32 h1)``,
``x = lo - h1 + (2^32 - 1) h0 (mod p)``.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["add", "inv", "matvec", "mul", "neg", "prod_rows", "sub", "sum_rows"]

P = np.uint64(0xFFFFFFFF00000001)
EPS = np.uint64(0xFFFFFFFF)  # 2^64 - p = 2^32 - 1
M32 = np.uint64(0xFFFFFFFF)
S32 = np.uint64(32)
ZERO = np.uint64(0)
ONE = np.uint64(1)


@numba.njit(cache=True, inline="always")
def _add(a, b):
    s = a + b
    if s < a:
        s += EPS
    elif s >= P:
        s -= P
    return s


@numba.njit(cache=True, inline="always")
def _sub(a, b):
    d = a - b
    if a < b:
        d -= EPS
    return d


@numba.njit(cache=True, inline="always")
def _mul(a, b):
    a0 = a & M32
    a1 = a >> S32
    b0 = b & M32
    b1 = b >> S32
    ll = a0 * b0
    hl = a1 * b0
    lh = a0 * b1
    hh = a1 * b1
    cross = (ll >> S32) + (hl & M32) + (lh & M32)
    hi = hh + (hl >> S32) + (lh >> S32) + (cross >> S32)
    lo = (cross << S32) | (ll & M32)
    h1 = hi >> S32
    h0 = hi & M32
    t0 = lo - h1
    if lo < h1:
        t0 -= EPS
    t1 = h0 * EPS
    r = t0 + t1
    if r < t1:
        r += EPS
    if r >= P:
        r -= P
    return r


@numba.njit(cache=True)
def _pow(a, e):
    r = ONE
    while e > 0:
        if e & 1:
            r = _mul(r, a)
        a = _mul(a, a)
        e >>= 1
    return r


@numba.vectorize(["uint64(uint64, uint64)"], cache=True)
def add(a, b):
    """``a + b mod p``."""
    return _add(a, b)


@numba.vectorize(["uint64(uint64, uint64)"], cache=True)
def sub(a, b):
    """``a - b mod p``."""
    return _sub(a, b)


@numba.vectorize(["uint64(uint64, uint64)"], cache=True)
def mul(a, b):
    """``a * b mod p``."""
    return _mul(a, b)


@numba.vectorize(["uint64(uint64)"], cache=True)
def neg(a):
    """``-a mod p``."""
    return _sub(ZERO, a)


@numba.njit(cache=True)
def sum_rows(x):
    """The sum mod p of each row of the 2-D array ``x``."""
    out = np.zeros(x.shape[0], dtype=np.uint64)
    for i in range(x.shape[0]):
        acc = ZERO
        for j in range(x.shape[1]):
            acc = _add(acc, x[i, j])
        out[i] = acc
    return out


@numba.njit(cache=True)
def prod_rows(x):
    """The product mod p of each row of the 2-D array ``x``."""
    out = np.ones(x.shape[0], dtype=np.uint64)
    for i in range(x.shape[0]):
        acc = ONE
        for j in range(x.shape[1]):
            acc = _mul(acc, x[i, j])
        out[i] = acc
    return out


@numba.njit(cache=True)
def matvec(m, v):
    """``m @ v mod p`` for a 2-D ``m`` and a 1-D ``v``."""
    out = np.zeros(m.shape[0], dtype=np.uint64)
    for i in range(m.shape[0]):
        acc = ZERO
        for j in range(m.shape[1]):
            acc = _add(acc, _mul(m[i, j], v[j]))
        out[i] = acc
    return out


@numba.njit(cache=True)
def inv(x):
    """Elementwise inverse mod p (Montgomery's batch trick: one exponentiation); every
    element must be non-zero."""
    n = x.shape[0]
    out = np.empty(n, dtype=np.uint64)
    if n == 0:
        return out
    acc = ONE
    for i in range(n):
        out[i] = acc
        acc = _mul(acc, x[i])
    acc = _pow(acc, P - np.uint64(2))
    for i in range(n - 1, -1, -1):
        out[i] = _mul(out[i], acc)
        acc = _mul(acc, x[i])
    return out


@numba.njit(cache=True)
def butterflies(a, twiddles, first):
    """In place: the radix-2 NTT levels ``m = first, 2 first, ..., n`` of every row of ``a``
    (rows in bit-reversed order; ``first = 2``: the whole NTT); ``twiddles[m/2 - 1 + j] =
    w_m^j`` for each level ``m``. The twiddle products of a block are formed first, in a
    loop of independent multiplications the compiler can vectorise."""
    rows, n = a.shape
    tmp = np.empty(max(n // 2, 1), dtype=np.uint64)
    for r in range(rows):
        m = first
        while m <= n:
            half = m // 2
            off = half - 1
            for start in range(0, n, m):
                for j in range(half):
                    tmp[j] = _mul(a[r, start + j + half], twiddles[off + j])
                for j in range(half):
                    u = a[r, start + j]
                    a[r, start + j] = _add(u, tmp[j])
                    a[r, start + j + half] = _sub(u, tmp[j])
            m *= 2


@numba.njit(cache=True)
def power_table(r, count, scale):
    """``out[i, j] = scale * r_i^(j + 1)`` for ``j < count``."""
    out = np.empty((r.shape[0], count), dtype=np.uint64)
    for i in range(r.shape[0]):
        acc = _mul(scale, r[i])
        for j in range(count):
            out[i, j] = acc
            acc = _mul(acc, r[i])
    return out


@numba.njit(cache=True)
def weighted_range(x0, x1, s, pair_consts, middle, has_middle):
    """``x0 * prod_{k=lo}^{hi} (x1 - k)`` elementwise (1-D ``x0``, ``x1``), pairing ``k``
    with ``lo + hi - k``: ``(x - k)(x - (s - k)) = u + k (s - k)``, ``u = x^2 - s x``,
    ``s = lo + hi`` (``pair_consts`` the ``k (s - k)`` mod p), times ``x - middle`` when the
    range has odd length: half the multiplications. One pass per factor over all the
    elements (independent multiplications, vectorisable), not one chain per element."""
    n = x0.shape[0]
    out = np.empty(n, dtype=np.uint64)
    u = np.empty(n, dtype=np.uint64)
    for i in range(n):
        x = x1[i]
        u[i] = _sub(_mul(x, x), _mul(s, x))
        acc = x0[i]
        if has_middle:
            acc = _mul(acc, _sub(x, middle))
        out[i] = acc
    for k in range(pair_consts.shape[0]):
        c = pair_consts[k]
        for i in range(n):
            out[i] = _mul(out[i], _add(u[i], c))
    return out


@numba.njit(cache=True)
def prod_differences(a, b):
    """``out[i] = prod_{j: b_j != a_i} (a_i - b_j)``: O(len a * len b), no temporary."""
    out = np.empty(a.shape[0], dtype=np.uint64)
    for i in range(a.shape[0]):
        acc = ONE
        for j in range(b.shape[0]):
            if b[j] != a[i]:
                acc = _mul(acc, _sub(a[i], b[j]))
        out[i] = acc
    return out
