"""Randomised bit flipping of implicit-feedback vectors (DPLCF, Gao et al., SIGIR 2020).

Each bit of a user's 0/1 interaction vector is reported independently (paper, Eq. 3):

    P(report 1 | bit 1) = p,    P(report 1 | bit 0) = q,    0 <= q < p <= 1.

For one changed bit (event level) the likelihood ratios are p/q for an observed 1 and
(1 - q)/(1 - p) for an observed 0, so the mechanism is eps-LDP with

    eps = max(ln(p/q), ln((1 - q)/(1 - p))).

The paper (Sec. 3.2.1, citing Theorem 3.1 of its ref. [38]) only bounds p/q. That is enough
for the symmetric choice (p = 1 - q, DPLCF-SP) but not for the published asymmetric one
(p = 1, DPLCF-AP): there (1 - q)/(1 - p) is infinite, an observed 0 proves that the user never
had the interaction, and only presence is protected ("one-sided"). Optimised unary encoding
(p = 1/2, q = 1/(e^eps + 1); Wang et al., USENIX Security 2017) is a two-sided asymmetric
alternative; its eps is for moving a 1 between two bits, so per bit it is below eps. A
whole N-bit vector costs N * eps by basic composition.

Sampling uses the explicit ``numpy.random.Generator`` it is given. Seeded generators are for
simulation only. A deployed client passes :func:`dprec.random.secure_generator` (ChaCha20
keyed from the operating system's CSPRNG, what ``dprec.client`` uses): a PCG64 stream seeded
from a secure source is not a CSPRNG (its outputs can reveal its state).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np
import scipy.sparse as sp

from dprec.errors import InvalidParameterError, PrivacyParameterError, as_float
from dprec.privacy.events import BitFlipDpEvent

__all__ = ["MAX_EPSILON", "MIN_EPSILON", "SYMMETRIC_MAX_EPSILON", "BitFlip"]

logger = logging.getLogger(__name__)

# One random byte per bit; a byte equal to the threshold is refined with a float64 uniform,
# so P(report 1) equals p (or q) to within 2^-61 (see ``_threshold``).
_LEVELS = 256
_UINT64_MAX = np.iinfo(np.uint64).max
_DEFAULT_BLOCK_BITS = 1 << 23
_BYTE_ONES = np.uint64(0x0101010101010101)
_BYTE_HIGH = np.uint64(0x8080808080808080)


MIN_EPSILON = 1e-12
"""Below this, p - q is within a few thousand float64 ulps of 0.5 and the estimator's
1 / (p - q) amplifies rounding error; at about 1e-16 p and q become equal."""


MAX_EPSILON = 700.0
"""The largest epsilon the asymmetric and OUE flips accept: e^eps and e^-eps stay finite,
normal float64 numbers up to about 708 (e^eps overflows above 709.78, e^-eps is 0 above
745, where the flip would report every bit as it is)."""

SYMMETRIC_MAX_EPSILON = 53 * math.log(2.0)
"""The symmetric flip's limit, 53 ln 2 = 36.74: above it e^-eps is below float64's spacing
at 1, so p = 1/(1 + e^-eps) rounds to 1 and q = 1 - p to 0 (no flip at all)."""


def _check_epsilon(eps: float, largest: float = MAX_EPSILON, kind: str = "bit") -> float:
    try:
        value = float(eps)
    except (TypeError, ValueError):
        raise PrivacyParameterError(f"epsilon must be a number > 0, got {eps!r}") from None
    if not value > 0:
        raise PrivacyParameterError(f"epsilon must be > 0, got {eps}")
    if not math.isfinite(value):
        raise PrivacyParameterError(f"epsilon must be finite, got {eps}")
    if value < MIN_EPSILON:
        raise PrivacyParameterError(
            f"epsilon {value:g} is too small for a float64 flip probability "
            f"(p and q would be equal); use epsilon >= {MIN_EPSILON:g}")
    if not value < largest:
        raise PrivacyParameterError(
            f"epsilon must be < {largest:.6g} for the {kind} flip, got {value:g}: above it "
            "float64 cannot hold its flip probabilities (they round to 0 and 1, no flip at "
            f"all); use epsilon < {largest:.6g}")
    return value


def _threshold(prob: float) -> tuple[int, float]:
    """Split ``prob`` into (t, f) with prob = (t + f) / 256, t integer, 0 <= f < 1.

    For a uniform byte k: k < t gives 1, k > t gives 0, k == t gives 1 with probability f.
    Then P(1) = t/256 + f/256 = prob; ``prob * 256`` is exact in binary floating point.
    """
    scaled = prob * _LEVELS
    t = math.floor(scaled)
    return int(t), float(scaled - t)


@numba.njit(inline="always")
def _resolve(k, t, f, rng):  # pragma: no cover - compiled
    """1 with probability (t + f)/256 for a uniform byte k (see ``_threshold``)."""
    v = 1 if k < t else 0
    if k == t:
        v = 1 if rng.random() < f else 0
    return v


# Holds the GIL: it advances ``rng`` without the Generator's lock.
@numba.njit(cache=True)
def _flip_block(
    words, bytes_, indptr, indices, stored, tq, fq, tp, fp, rng, out
):  # pragma: no cover
    """Fill ``out`` (rows x cols) with flipped bits from the random bytes ``bytes_`` (a view of
    ``words``, rows x 8*ceil(cols/8)): every cell against q, then the stored ones of each row
    (CSR ``indptr``/``indices`` where ``stored`` is true) against p. Bytes equal to the q
    threshold (1 in 256) are found 8 at a time with the zero-byte test on
    ``words ^ pattern`` and resolved with an extra uniform."""
    n_rows, n_cols = out.shape
    n_words = words.shape[1]
    pattern = np.uint64(tq) * _BYTE_ONES
    flagged = np.empty(n_words, np.int64)
    for r in range(n_rows):
        row_bytes = bytes_[r]
        row_out = out[r]
        row_words = words[r]
        for c in range(n_cols):
            row_out[c] = row_bytes[c] < tq
        n_flagged = 0
        for j in range(n_words):
            x = row_words[j] ^ pattern
            flagged[n_flagged] = j
            n_flagged += ((x - _BYTE_ONES) & ~x & _BYTE_HIGH) != 0
        for i in range(n_flagged):
            j = flagged[i]
            for c in range(8 * j, min(8 * j + 8, n_cols)):
                if row_bytes[c] == tq:
                    row_out[c] = 1 if rng.random() < fq else 0
        for s in range(indptr[r], indptr[r + 1]):
            if stored[s]:
                c = indices[s]
                row_out[c] = _resolve(row_bytes[c], tp, fp, rng)


@numba.njit(cache=True, nogil=True)
def _collect_ones(block, cols, counts):  # pragma: no cover - compiled
    """Write the column of every nonzero of ``block`` (row-major) into ``cols`` and the
    number per row into ``counts``; return the total."""
    n_rows, n_cols = block.shape
    n = 0
    for r in range(n_rows):
        row = block[r]
        start = n
        for c in range(n_cols):
            cols[n] = c
            n += row[c] != 0
        counts[r] = n - start
    return n


def _as_csr(rows: Any) -> sp.csr_matrix:
    if not sp.issparse(rows):
        raise InvalidParameterError(
            f"rows must be a scipy.sparse matrix (users x items), got {type(rows).__name__}"
        )
    if len(rows.shape) != 2:
        raise InvalidParameterError(
            f"rows must be 2-dimensional (users x items), got shape {rows.shape}")
    return rows if rows.format == "csr" else rows.tocsr()


def _check_rng(rng: Any) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise InvalidParameterError(
            f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


def _check_dtype(dtype: Any) -> np.dtype:
    dt = np.dtype(dtype)
    if dt.kind not in "biuf":
        raise InvalidParameterError(f"dtype must be a bool, integer or float type, got {dt}")
    return dt


@dataclass(frozen=True)
class BitFlip:
    """Flip each bit independently: a 1 stays 1 with probability ``p``, a 0 becomes 1 with
    probability ``q`` (DPLCF Eq. 3). Requires 0 <= q < p <= 1.

    Event-level local DP with eps = max(ln(p/q), ln((1-q)/(1-p))); see the module docstring.
    """

    p: float
    """Probability that a stored 1 is reported as 1."""
    q: float
    """Probability that a stored 0 is reported as 1."""
    name: str = field(default="bitflip", compare=False)
    """Label used in reports (the constructors set the variant)."""

    def __post_init__(self) -> None:
        refused = f"bit-flip probabilities must be numbers, got p={self.p!r}, q={self.q!r}"
        p, q = as_float(self.p, refused), as_float(self.q, refused)
        if not 0.0 <= q < p <= 1.0:
            raise InvalidParameterError(
                f"bit-flip probabilities must satisfy 0 <= q < p <= 1, got p={self.p}, q={self.q}"
            )
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "q", q)

    @classmethod
    def symmetric(cls, eps: float) -> BitFlip:
        """DPLCF-SP: p = e^eps / (1 + e^eps), q = 1 - p; two-sided eps-LDP per bit
        (eps < :data:`SYMMETRIC_MAX_EPSILON`)."""
        e = _check_epsilon(eps, SYMMETRIC_MAX_EPSILON, "symmetric")
        p = 1.0 / (1.0 + math.exp(-e))
        return cls(p, 1.0 - p, name="bitflip-symmetric")

    @classmethod
    def asymmetric(cls, eps: float) -> BitFlip:
        """DPLCF-AP as published: p = 1, q = e^-eps; protects presence only (one-sided)
        (eps < :data:`MAX_EPSILON`)."""
        e = _check_epsilon(eps, MAX_EPSILON, "asymmetric")
        return cls(1.0, math.exp(-e), name="bitflip-asymmetric")

    @classmethod
    def oue(cls, eps: float) -> BitFlip:
        """Optimised unary encoding (Wang et al., USENIX Security 2017): p = 1/2,
        q = 1/(e^eps + 1).

        Wang et al.'s eps is for replacing one value by another, which moves a 1 between two
        bits: ln(p/q) + ln((1-q)/(1-p)) = eps exactly. For one interaction (one bit, DPLCF's
        unit) it is two-sided with the smaller eps_presence = ln((e^eps + 1)/2) and
        eps_absence = ln(2 e^eps/(e^eps + 1)); ``epsilon`` reports that per-bit value.
        ``eps < MAX_EPSILON`` (:data:`MAX_EPSILON`: e^eps overflows float64 above 709.78).
        """
        e = _check_epsilon(eps, MAX_EPSILON, "OUE")
        return cls(0.5, 1.0 / (math.exp(e) + 1.0), name="bitflip-oue")

    @property
    def eps_presence(self) -> float:
        """ln(p/q): the bound on what an observed 1 reveals (infinite when q = 0)."""
        return math.inf if self.q == 0.0 else math.log(self.p) - math.log(self.q)

    @property
    def eps_absence(self) -> float:
        """ln((1-q)/(1-p)): the bound on what an observed 0 reveals (infinite when p = 1)."""
        return math.inf if self.p == 1.0 else math.log1p(-self.q) - math.log1p(-self.p)

    @property
    def epsilon(self) -> float:
        """The two-sided event-level epsilon, max(eps_presence, eps_absence)."""
        return max(self.eps_presence, self.eps_absence)

    def describe(self) -> dict[str, object]:
        """The parameters for the report's ``mechanisms`` list (its cost is the accountant's
        answer for :meth:`dp_event`: :func:`dprec.mechanisms.base.event_guarantee`)."""
        return {"name": self.name, "p": self.p, "q": self.q}

    def dp_event(self) -> BitFlipDpEvent:
        """The accounting event of one reported bit: ``BitFlipDpEvent(p, q)``."""
        return BitFlipDpEvent(self.p, self.q)

    def flip_matrix(self) -> np.ndarray:
        """P(obs | true) for one bit, as a (2, 2) array indexed [obs][true]."""
        p, q = self.p, self.q
        return np.array([[1.0 - q, 1.0 - p], [q, p]])

    def transition_matrix(self) -> np.ndarray:
        """A[obs][true] over pair states (00, 01, 10, 11) of items (i, j) (DPLCF Eq. 5-6):
        A = P(obs_i | true_i) P(obs_j | true_j), i.e. kron(F, F) with F = ``flip_matrix()``.

        The paper's printed Eq. 6 has two typos (entries [01][00] and [10][00] must be
        q(1-q)); this is the matrix its Eq. 5 defines.
        """
        f = self.flip_matrix()
        return np.kron(f, f)

    def inverse_transition(self) -> np.ndarray:
        """A^-1 in closed form, kron(F^-1, F^-1) with F^-1 = [[p, p-1], [-q, 1-q]] / (p - q)
        (DPLCF Eq. 7: n_hat = A^-1 m is unbiased for the true pair counts)."""
        p, q = self.p, self.q
        finv = np.array([[p, -(1.0 - p)], [-q, 1.0 - q]]) / (p - q)
        return np.kron(finv, finv)

    def obfuscate_dense(
        self,
        rows: sp.spmatrix | sp.sparray,
        rng: np.random.Generator,
        dtype: Any = np.float32,
        *,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """Obfuscate a batch of users' 0/1 vectors (b x N sparse; any stored nonzero is a 1)
        into a dense (b x N) 0/1 array of ``dtype`` (written into ``out`` if given).

        One random byte per bit is compared against q everywhere and, at the stored ones only,
        against p; a byte equal to the threshold (1 in 256) is resolved with an extra float64
        uniform, so the flip probabilities are p and q to within 2^-61 (no 8-bit rounding).
        About 1-2 ns per bit; the rows of one call share one random block.
        """
        csr = _as_csr(rows)
        gen = _check_rng(rng)
        n_rows, n_cols = csr.shape
        if out is None:
            out = np.empty((n_rows, n_cols), dtype=_check_dtype(dtype))
        else:
            _check_dtype(out.dtype)
            if out.shape != (n_rows, n_cols) or not out.flags.c_contiguous:
                raise InvalidParameterError(
                    f"out must be a C-contiguous array of shape {(n_rows, n_cols)}, "
                    f"got shape {out.shape}"
                )
        if n_rows * n_cols == 0:
            return out
        shape = (n_rows, -(-n_cols // 8))
        words = gen.integers(0, _UINT64_MAX, size=shape, dtype=np.uint64, endpoint=True)
        tq, fq = _threshold(self.q)
        tp, fp = _threshold(self.p)
        target = out.view(np.uint8) if out.dtype == np.bool_ else out
        _flip_block(
            words,
            words.view(np.uint8),
            csr.indptr.astype(np.int64, copy=False),
            csr.indices.astype(np.int64, copy=False),
            csr.data != 0,
            tq,
            fq,
            tp,
            fp,
            gen,
            target,
        )
        return out

    def __call__(
        self,
        rows: sp.spmatrix | sp.sparray,
        rng: np.random.Generator,
        *,
        dtype: Any = np.float32,
        block_bits: int = _DEFAULT_BLOCK_BITS,
    ) -> sp.csr_matrix:
        """Obfuscate users' 0/1 vectors (b x N sparse) into a sparse (b x N) CSR of ones.

        Same distribution as :meth:`obfuscate_dense` (not the same draws for a given seed);
        rows are processed in blocks of about ``block_bits`` bits to bound memory.
        """
        csr = _as_csr(rows)
        gen = _check_rng(rng)
        dt = _check_dtype(dtype)
        if isinstance(block_bits, bool) or not isinstance(block_bits, int) or block_bits < 1:
            raise InvalidParameterError(
                f"block_bits must be a positive integer, got {block_bits!r}")
        n_rows, n_cols = csr.shape
        index_dtype = np.int32 if n_cols < 2**31 else np.int64
        step = max(1, block_bits // max(n_cols, 1))
        height = min(step, n_rows)
        logger.debug("%s: %d x %d bits in blocks of %d rows", self.name, n_rows, n_cols, step)
        block = np.empty((height, n_cols), dtype=np.uint8)
        cols_buf = np.empty(height * n_cols, dtype=index_dtype)
        counts = np.zeros(n_rows, dtype=np.int64)
        cols: list[np.ndarray] = []
        for start in range(0, n_rows, step):
            stop = min(start + step, n_rows)
            part = self.obfuscate_dense(csr[start:stop], gen, out=block[: stop - start])
            n = _collect_ones(part, cols_buf, counts[start:stop])
            cols.append(cols_buf[:n].copy())
        indptr = np.zeros(n_rows + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        indices = np.concatenate(cols) if cols else np.zeros(0, dtype=index_dtype)
        data = np.ones(len(indices), dtype=dt)
        return sp.csr_matrix((data, indices, indptr), shape=(n_rows, n_cols))
