"""BitFlip: parameters, exact privacy boundaries, and the sampled distribution.

The statistical tests use fixed seeds and 5-standard-error (or p >= 1e-4) acceptance, so a
correct sampler fails them with probability well below 1e-4, while a wrong flip rate, a
correlation between neighbouring bits, or an 8-bit rounding of p or q fails them.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats

from dprec.errors import DprecError, PrivacyParameterError
from dprec.mechanisms import BitFlip, Mechanism, event_guarantee
from dprec.mechanisms.bitflip import MAX_EPSILON, SYMMETRIC_MAX_EPSILON
from dprec.privacy.accountant import event_sides
from dprec.privacy.events import BitFlipDpEvent
from dprec.privacy.pld_accountant import PldAccountant

EPSILONS = (0.5, 1.0, 3.0)
CONSTRUCTORS = ("symmetric", "asymmetric", "oue")
Z = 5.0  # acceptance in standard errors


def make(kind: str, eps: float) -> BitFlip:
    return getattr(BitFlip, kind)(eps)


def half_ones(n_rows: int, n_cols: int, seed: int) -> sp.csr_matrix:
    """A 0/1 CSR with each bit 1 with probability 1/2 (odd width: exercises word padding)."""
    dense = np.random.default_rng(seed).random((n_rows, n_cols)) < 0.5
    return sp.csr_matrix(dense.astype(np.float64))


def sample(mech: BitFlip, x: sp.csr_matrix, rng: np.random.Generator, path: str) -> np.ndarray:
    if path == "dense":
        return mech.obfuscate_dense(x, rng)
    if path == "call":
        out = mech(x, rng)
        assert sp.issparse(out) and out.format == "csr" and out.has_canonical_format
        return out.toarray()
    # sparse output built from small blocks (several rows per block, many blocks)
    return mech(x, rng, block_bits=50_000).toarray()


def rates(truth: np.ndarray, obs: np.ndarray) -> tuple[float, int, float, int]:
    ones, zeros = truth == 1, truth == 0
    return obs[ones].mean(), int(ones.sum()), obs[zeros].mean(), int(zeros.sum())


def assert_rate(observed: float, expected: float, n: int, what: str) -> None:
    se = math.sqrt(expected * (1 - expected) / n)
    if se == 0:
        assert observed == expected, f"{what}: {observed} != {expected} (deterministic)"
    else:
        assert abs(observed - expected) <= Z * se, (
            f"{what}: {observed:.6f} vs {expected:.6f}, {abs(observed - expected) / se:.1f} SE"
        )


# ---------------------------------------------------------------- parameters


def test_constructors_follow_the_published_formulas():
    for eps in (0.1, 1.0, 4.0):
        e = math.exp(eps)
        s = BitFlip.symmetric(eps)
        assert s.p == pytest.approx(e / (1 + e), rel=1e-15) and s.q == 1 - s.p
        a = BitFlip.asymmetric(eps)
        assert a.p == 1.0 and a.q == pytest.approx(1 / e, rel=1e-15)
        o = BitFlip.oue(eps)
        assert o.p == 0.5 and o.q == pytest.approx(1 / (e + 1), rel=1e-15)


@pytest.mark.parametrize("p,q", [(0.5, 0.5), (0.2, 0.7), (1.01, 0.5), (0.5, -0.1), (math.nan, 0.1)])
def test_invalid_probabilities_name_the_rule_and_values(p, q):
    with pytest.raises(DprecError, match=r"0 <= q < p <= 1, got p=.*, q="):
        BitFlip(p, q)


def test_probabilities_are_stored_as_floats_and_frozen():
    m = BitFlip(np.float32(0.75), 0)
    assert type(m.p) is float and type(m.q) is float
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.p = 0.9  # type: ignore[misc]
    assert BitFlip(0.7, 0.2) == BitFlip(0.7, 0.2, name="other")
    with pytest.raises(DprecError, match="must be numbers"):
        BitFlip("a", 0.1)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", CONSTRUCTORS)
@pytest.mark.parametrize("eps", [0, -1, -math.inf, math.nan])
def test_nonpositive_epsilon_is_rejected(kind, eps):
    with pytest.raises(DprecError, match=r"epsilon must be > 0, got"):
        make(kind, eps)


@pytest.mark.parametrize("kind", CONSTRUCTORS)
def test_infinite_or_non_numeric_epsilon_is_rejected(kind):
    with pytest.raises(DprecError, match=r"epsilon must be finite, got inf"):
        make(kind, math.inf)
    with pytest.raises(DprecError, match=r"epsilon must be a number"):
        make(kind, "one")


@pytest.mark.parametrize("kind,largest", [("symmetric", SYMMETRIC_MAX_EPSILON),
                                          ("asymmetric", MAX_EPSILON), ("oue", MAX_EPSILON)])
def test_an_epsilon_float64_cannot_hold_is_refused_with_the_largest_supported(kind, largest):
    # regression: dplcf-oue / ldp-pop at eps 1000 raised a raw OverflowError from e^eps
    for eps in (largest, 1000.0, 1e300):
        with pytest.raises(PrivacyParameterError,
                           match=rf"epsilon must be < {largest:.6g} for the .* flip, got"):
            make(kind, eps)
    below = make(kind, float(np.nextafter(largest, 0.0)))
    assert 0.0 < below.q < below.p and (below.p < 1.0 or kind == "asymmetric")
    assert math.isfinite(below.eps_presence)


# ---------------------------------------------------------------- exact boundaries


@pytest.mark.parametrize("eps", [0.05, 0.5, 1.0, 2.0, 3.0, 5.0])
def test_symmetric_epsilon_is_exact(eps):
    m = BitFlip.symmetric(eps)
    assert abs(m.epsilon - eps) <= 1e-12
    assert abs(m.eps_presence - eps) <= 1e-12 and abs(m.eps_absence - eps) <= 1e-12


@pytest.mark.parametrize("eps", [0.05, 0.5, 1.0, 3.0, 8.0])
def test_oue_is_exact_for_a_moved_one_and_below_eps_per_bit(eps):
    # Wang et al.'s unit: a 1 moves between two bits, costing ln(p/q) + ln((1-q)/(1-p)).
    m = BitFlip.oue(eps)
    assert abs(m.eps_presence + m.eps_absence - eps) <= 1e-12
    e = math.exp(eps)
    assert m.eps_presence == pytest.approx(math.log((e + 1) / 2), rel=1e-12)
    assert m.eps_absence == pytest.approx(math.log(2 * e / (e + 1)), rel=1e-12)
    assert m.eps_absence < m.epsilon == m.eps_presence < eps


@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0])
def test_asymmetric_is_exact_on_presence_and_unbounded_on_absence(eps):
    m = BitFlip.asymmetric(eps)
    assert abs(m.eps_presence - eps) <= 1e-12
    assert m.eps_absence == math.inf and m.epsilon == math.inf


@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0])
def test_ratio_just_above_the_boundary_reports_more_than_eps(eps):
    # opendp style: p/q exactly e^eps passes, p/q = e^eps (1 + 1e-9) does not.
    q = 0.01
    at = BitFlip(q * math.exp(eps), q)
    above = BitFlip(q * math.exp(eps) * (1 + 1e-9), q)
    assert at.eps_presence == pytest.approx(eps, abs=1e-12)
    assert above.epsilon > eps and above.eps_presence > eps + 5e-10
    # the absence side alone can push epsilon over too
    s = BitFlip.symmetric(eps)
    tilted = BitFlip(s.p + 1e-9, s.q)
    assert tilted.eps_absence > eps and tilted.epsilon > eps


@settings(max_examples=200, deadline=None)
@given(
    p=st.floats(0.0, 1.0, allow_nan=False, exclude_min=True),
    frac=st.floats(0.0, 1.0, allow_nan=False, exclude_max=True),
)
def test_epsilon_is_the_larger_side_for_any_valid_pair(p, frac):
    q = p * frac
    assume(q < p)  # p * frac rounds to p for subnormal p
    m = BitFlip(p, q)
    assert m.epsilon == max(m.eps_presence, m.eps_absence)
    assert m.eps_presence >= 0 and m.eps_absence >= 0  # p/q may round to 1
    if q > 0 and math.isfinite(p / q):
        assert m.eps_presence == pytest.approx(math.log(p / q), rel=1e-9, abs=1e-12)
    elif q > 0:  # p/q overflows a float, its log does not
        assert 700 < m.eps_presence < math.inf
    if p < 1:
        assert m.eps_absence == pytest.approx(math.log((1 - q) / (1 - p)), rel=1e-9, abs=1e-12)
    g = event_guarantee(m)
    assert g.sides == ("two" if q > 0 and p < 1 else "one" if q > 0 else "none")


# ---------------------------------------------------------------- guarantees and events


@pytest.mark.parametrize("eps", EPSILONS)
def test_event_guarantee_sides(eps):
    sym = event_guarantee(BitFlip.symmetric(eps))
    assert (sym.sides, sym.level, sym.model) == ("two", "event", "local")
    assert sym.epsilon == pytest.approx(eps, abs=1e-12)
    assert sym.mechanism.startswith("1 x BitFlipDpEvent(")

    oue = event_guarantee(BitFlip.oue(eps))
    assert oue.sides == "two" and oue.epsilon == pytest.approx(math.log((math.exp(eps) + 1) / 2))

    asym = event_guarantee(BitFlip.asymmetric(eps))
    assert asym.sides == "one" and asym.epsilon == pytest.approx(eps, abs=1e-12)
    assert any("presence-side" in n for n in asym.notes)


def test_event_guarantee_without_presence_protection_is_none():
    g = event_guarantee(BitFlip(0.6, 0.0))
    assert g.sides == "none" and g.epsilon == math.inf
    assert g.to_json()["epsilon"] == "inf"


@pytest.mark.parametrize("kind,sides", [("symmetric", "two"), ("asymmetric", "one")])
def test_user_level_is_basic_composition_of_the_bits(kind, sides):
    m = make(kind, 0.5)
    g = event_guarantee(m, 9953, level="user")
    assert g.level == "user" and g.sides == sides
    assert g.epsilon == 9953 * event_guarantee(m).epsilon
    assert g.epsilon == pytest.approx(9953 * 0.5, rel=1e-12)
    assert g.mechanism.startswith("9953 x ")
    assert event_guarantee(m, np.int64(3), level="user").epsilon == pytest.approx(1.5)


@pytest.mark.parametrize("n", [0, -5, 2.5, True])
def test_event_guarantee_rejects_bad_counts(n):
    with pytest.raises(DprecError, match="count must be an integer >= 1"):
        event_guarantee(BitFlip.symmetric(1.0), n)


def test_describe_names_the_mechanism_and_it_is_a_mechanism():
    m = BitFlip.oue(1.0)
    assert m.describe() == {"name": "bitflip-oue", "p": 0.5, "q": m.q}
    assert BitFlip(0.7, 0.2).describe()["name"] == "bitflip"
    assert isinstance(m, Mechanism)
    assert not hasattr(m, "guarantee") and not hasattr(m, "user_guarantee")


# ---------------------------------------------------------------- transition matrices


def explicit_transition(p: float, q: float) -> np.ndarray:
    """A[obs][true] entry by entry, independent of the Kronecker construction."""

    def p1(obs: int, true: int) -> float:
        return (p if obs else 1 - p) if true else (q if obs else 1 - q)

    states = list(itertools.product((0, 1), repeat=2))  # 00, 01, 10, 11
    a = np.empty((4, 4))
    for (o, (oi, oj)), (t, (ti, tj)) in itertools.product(enumerate(states), enumerate(states)):
        a[o, t] = p1(oi, ti) * p1(oj, tj)
    return a


@pytest.mark.parametrize("kind", CONSTRUCTORS)
@pytest.mark.parametrize("eps", EPSILONS)
def test_transition_matrix_and_its_inverse(kind, eps):
    m = make(kind, eps)
    a = m.transition_matrix()
    assert a.shape == (4, 4)
    np.testing.assert_allclose(a, explicit_transition(m.p, m.q), rtol=0, atol=1e-15)
    np.testing.assert_allclose(a.sum(axis=0), 1.0, atol=1e-15)
    inv = m.inverse_transition()
    np.testing.assert_allclose(inv @ a, np.eye(4), atol=1e-12)
    np.testing.assert_allclose(a @ inv, np.eye(4), atol=1e-12)
    np.testing.assert_allclose(inv, np.linalg.inv(a), rtol=1e-10, atol=1e-12)


def test_asymmetric_inverse_in_closed_form():
    # With p = 1: n00 = m00 / (1-q)^2 and n11 = m11 - q (n01 + n10) - q^2 n00.
    q = math.exp(-1.0)
    inv = BitFlip.asymmetric(1.0).inverse_transition()
    np.testing.assert_allclose(inv[0], [1 / (1 - q) ** 2, 0, 0, 0], atol=1e-14)
    np.testing.assert_allclose(inv[1], [-q / (1 - q) ** 2, 1 / (1 - q), 0, 0], atol=1e-14)
    np.testing.assert_allclose(inv[3, 3], 1.0, atol=1e-14)


# ---------------------------------------------------------------- sampling: flip rates


@pytest.mark.parametrize("path", ["dense", "call"])
@pytest.mark.parametrize("kind", CONSTRUCTORS)
@pytest.mark.parametrize("eps", EPSILONS)
def test_empirical_flip_rates(kind, eps, path):
    m = make(kind, eps)
    x = half_ones(1001, 1999, seed=7)  # ~2e6 bits, ~1e6 ones and ~1e6 zeros
    obs = sample(m, x, np.random.default_rng(hash((kind, eps, path)) % 2**32), path)
    assert set(np.unique(obs)) <= {0, 1}
    p_hat, n1, q_hat, n0 = rates(x.toarray(), obs)
    assert n1 >= 900_000 and n0 >= 900_000
    assert_rate(p_hat, m.p, n1, f"P(1|1) {kind} eps={eps} {path}")
    assert_rate(q_hat, m.q, n0, f"P(1|0) {kind} eps={eps} {path}")


@pytest.mark.parametrize("path", ["dense", "blocks"])
@pytest.mark.parametrize(
    "p,q",
    # (t, f) splits of p*256 and q*256 with f = 1/2: an 8-bit comparison (ties dropped or
    # always kept) is off by 1/512, i.e. tens of standard errors here.
    [(1 - 1 / 512, 1 / 512), (0.5 + 1 / 512, 0.25 + 1 / 512)],
)
def test_flip_rates_are_exact_below_byte_resolution(p, q, path):
    m = BitFlip(p, q)
    x = half_ones(1500, 1337, seed=11)
    obs = sample(m, x, np.random.default_rng(12), path)
    p_hat, n1, q_hat, n0 = rates(x.toarray(), obs)
    assert_rate(p_hat, p, n1, "P(1|1)")
    assert_rate(q_hat, q, n0, "P(1|0)")


def test_ratings_count_as_ones_and_explicit_zeros_as_zeros():
    n_rows = 200_000
    rows = np.repeat(np.arange(n_rows), 2)
    cols = np.tile([0, 1], n_rows)
    data = np.tile([4.0, 0.0], n_rows)  # column 0: a rating; column 1: a stored 0
    x = sp.csr_matrix((data, (rows, cols)), shape=(n_rows, 3))
    m = BitFlip.asymmetric(1.0)
    obs = m.obfuscate_dense(x, np.random.default_rng(3))
    assert obs[:, 0].min() == 1.0  # p = 1: every rating survives
    assert_rate(obs[:, 1].mean(), m.q, n_rows, "stored zero")
    assert_rate(obs[:, 2].mean(), m.q, n_rows, "absent")


# ---------------------------------------------------------------- sampling: privacy ratios


@pytest.mark.parametrize("kind", ["symmetric", "oue"])
@pytest.mark.parametrize("eps", EPSILONS)
def test_sampled_likelihood_ratios_stay_within_e_eps(kind, eps):
    m = make(kind, eps)
    eps = m.epsilon  # per bit (below the constructor's eps for oue)
    x = half_ones(1001, 1999, seed=21)
    obs = m.obfuscate_dense(x, np.random.default_rng(22))
    p_hat, n1, q_hat, n0 = rates(x.toarray(), obs)
    # output 1: P(1|1)/P(1|0) = p/q; output 0: P(0|0)/P(0|1) = (1-q)/(1-p); both must be
    # <= e^eps (the reverse ratios are < 1 here since p > q).
    ratios = {1: ((p_hat, n1), (q_hat, n0)), 0: ((1 - q_hat, n0), (1 - p_hat, n1))}
    for out, ((a, na), (b, nb)) in ratios.items():
        log_ratio = math.log(a / b)
        se = math.sqrt((1 - a) / (a * na) + (1 - b) / (b * nb))  # delta method
        truth = m.eps_presence if out else m.eps_absence
        assert abs(log_ratio - truth) <= Z * se, f"output {out}: {log_ratio} vs {truth}"
        assert log_ratio <= eps + Z * se, f"output {out}: ratio {math.exp(log_ratio)}"
        if out == 1 or kind == "symmetric":
            # the bound is attained: the mechanism is no more private than it reports
            assert log_ratio >= eps - Z * se


@pytest.mark.parametrize("path", ["dense", "call"])
@pytest.mark.parametrize("eps", EPSILONS)
def test_asymmetric_output_zero_proves_absence(eps, path):
    m = BitFlip.asymmetric(eps)
    x = half_ones(1001, 1999, seed=31)
    truth = x.toarray()
    obs = sample(m, x, np.random.default_rng(32), path)
    ones = truth == 1
    assert ones.sum() >= 1_000_000 - 10_000
    assert obs[ones].min() == 1  # never a 0 for a 1: P(0|1) = 0 ...
    assert (obs[~ones] == 0).sum() > 0  # ... while P(0|0) > 0, so the ratio is unbounded
    # presence stays bounded by e^eps
    p_hat, n1, q_hat, n0 = rates(truth, obs)
    assert math.log(p_hat / q_hat) <= eps + Z * math.sqrt((1 - q_hat) / (q_hat * n0))
    g = event_guarantee(m)
    assert g.sides == "one" and m.eps_absence == math.inf


# ---------------------------------------------------------------- sampling: pairs


def pair_matrix(n_per_state: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """Rows of 2K bits; bits (2k, 2k+1) hold true pair state t in row block t."""
    k = 50
    n_rows = -(-n_per_state // k)
    blocks, states = [], []
    for t, (bi, bj) in enumerate(itertools.product((0, 1), repeat=2)):
        row = np.tile([bi, bj], k).astype(np.float64)
        blocks.append(np.tile(row, (n_rows, 1)))
        states.append(np.full(n_rows, t))
    return sp.csr_matrix(np.vstack(blocks)), np.concatenate(states)


def pair_state_counts(obs: np.ndarray, states: np.ndarray) -> np.ndarray:
    """counts[t, o]: observed pair state o among pairs with true state t."""
    code = (2 * obs[:, 0::2] + obs[:, 1::2]).astype(np.int64)  # (rows, K) pair codes
    counts = np.zeros((4, 4), dtype=np.int64)
    for t in range(4):
        counts[t] = np.bincount(code[states == t].ravel(), minlength=4)
    return counts


@pytest.mark.parametrize("path", ["dense", "call"])
@pytest.mark.parametrize("kind", CONSTRUCTORS)
@pytest.mark.parametrize("eps", [1.0, 3.0])
def test_pair_states_follow_the_transition_matrix(kind, eps, path):
    m = make(kind, eps)
    x, states = pair_matrix(100_000)
    obs = sample(m, x, np.random.default_rng(41), path)
    counts = pair_state_counts(obs, states)
    a = m.transition_matrix()
    for t in range(4):
        n = counts[t].sum()
        expected = n * a[:, t]
        possible = expected > 0
        assert counts[t][~possible].sum() == 0, f"impossible pair states observed for t={t}"
        if possible.sum() < 2:
            continue
        res = stats.chisquare(counts[t][possible], expected[possible])
        assert res.pvalue >= 1e-4, f"{kind} eps={eps} t={t}: {counts[t]} vs {expected}"


@pytest.mark.parametrize("kind", CONSTRUCTORS)
def test_inverse_recovers_true_pair_counts_on_average(kind):
    m = make(kind, 1.0)
    n_true = np.array([120, 30, 20, 30])  # n00, n01, n10, n11 over M = 200 users
    pairs = np.repeat(np.array([[0, 0], [0, 1], [1, 0], [1, 1]]), n_true, axis=0)
    reps = 3000
    x = sp.csr_matrix(np.tile(pairs, (reps, 1)).astype(np.float64))
    obs = m.obfuscate_dense(x, np.random.default_rng(51)).reshape(reps, -1, 2)
    code = (2 * obs[..., 0] + obs[..., 1]).astype(np.int64)
    m_counts = np.stack([(code == s).sum(axis=1) for s in range(4)], axis=1)  # (reps, 4)
    n_hat = m_counts @ m.inverse_transition().T
    mean, se = n_hat.mean(axis=0), n_hat.std(axis=0, ddof=1) / math.sqrt(reps)
    assert np.all(np.abs(mean - n_true) <= Z * se), f"{mean} vs {n_true} (se {se})"
    # and the naive counts are biased, so the test can tell the two apart
    assert np.any(np.abs(m_counts.mean(axis=0) - n_true) > 20 * se)


# ---------------------------------------------------------------- sampling: API


def test_dense_output_dtypes_and_out_argument():
    m = BitFlip.symmetric(1.0)
    x = half_ones(20, 37, seed=1)
    for dtype in (np.float32, np.float64, np.uint8, np.bool_):
        y = m.obfuscate_dense(x, np.random.default_rng(0), dtype=dtype)
        assert y.dtype == dtype and y.shape == (20, 37)
        assert set(np.unique(y.astype(np.int64))) <= {0, 1}
    buf = np.full((20, 37), 7, dtype=np.float32)
    y = m.obfuscate_dense(x, np.random.default_rng(0), out=buf)
    assert y is buf and set(np.unique(buf)) <= {0.0, 1.0}
    np.testing.assert_array_equal(buf, m.obfuscate_dense(x, np.random.default_rng(0)))
    with pytest.raises(DprecError, match="out must be a C-contiguous array of shape"):
        m.obfuscate_dense(x, np.random.default_rng(0), out=np.empty((20, 36), np.float32))
    with pytest.raises(DprecError, match="dtype must be a bool, integer or float type"):
        m.obfuscate_dense(x, np.random.default_rng(0), dtype=np.complex64)


def test_same_seed_same_output_and_seeds_differ():
    m = BitFlip.oue(1.0)
    x = half_ones(50, 300, seed=2)
    a = m.obfuscate_dense(x, np.random.default_rng(5))
    b = m.obfuscate_dense(x, np.random.default_rng(5))
    c = m.obfuscate_dense(x, np.random.default_rng(6))
    np.testing.assert_array_equal(a, b)
    assert (a != c).any()
    s1, s2 = m(x, np.random.default_rng(5)), m(x, np.random.default_rng(5))
    assert (s1 != s2).nnz == 0


def test_sparse_output_is_canonical_csr_of_ones():
    m = BitFlip.symmetric(0.5)
    x = half_ones(123, 77, seed=3)
    y = m(x, np.random.default_rng(9), block_bits=500, dtype=np.float64)
    assert isinstance(y, sp.csr_matrix) and y.shape == (123, 77)
    assert y.has_canonical_format and y.dtype == np.float64 and np.all(y.data == 1)


@pytest.mark.parametrize(
    "fmt", [sp.csr_array, sp.csc_matrix, sp.coo_matrix, lambda d: sp.csr_matrix(d, dtype=bool)]
)
def test_other_sparse_inputs_are_accepted(fmt):
    x = half_ones(10, 20, seed=4)
    m = BitFlip.asymmetric(2.0)
    y = m.obfuscate_dense(fmt(x.toarray()), np.random.default_rng(0))
    assert np.all(y[x.toarray() == 1] == 1)


def test_int64_indices_are_accepted():
    x = half_ones(30, 40, seed=5)
    x64 = sp.csr_matrix((x.data, x.indices.astype(np.int64), x.indptr.astype(np.int64)), x.shape)
    m = BitFlip.symmetric(1.0)
    np.testing.assert_array_equal(
        m.obfuscate_dense(x64, np.random.default_rng(1)),
        m.obfuscate_dense(x, np.random.default_rng(1)),
    )


def test_empty_inputs():
    m = BitFlip.symmetric(1.0)
    rng = np.random.default_rng(0)
    assert m.obfuscate_dense(sp.csr_matrix((0, 5)), rng).shape == (0, 5)
    assert m.obfuscate_dense(sp.csr_matrix((4, 0)), rng).shape == (4, 0)
    assert m(sp.csr_matrix((0, 5)), rng).shape == (0, 5)
    assert m(sp.csr_matrix((4, 0)), rng).nnz == 0


def test_bad_inputs_are_rejected():
    m = BitFlip.symmetric(1.0)
    x = half_ones(3, 4, seed=6)
    with pytest.raises(DprecError, match="rows must be a scipy.sparse matrix"):
        m.obfuscate_dense(x.toarray(), np.random.default_rng(0))
    with pytest.raises(DprecError, match="rng must be a numpy.random.Generator, got int"):
        m.obfuscate_dense(x, 0)  # type: ignore[arg-type]
    with pytest.raises(DprecError, match="rng must be a numpy.random.Generator, got RandomState"):
        m(x, np.random.RandomState(0))  # type: ignore[arg-type]
    with pytest.raises(DprecError, match="block_bits must be a positive integer, got 0"):
        m(x, np.random.default_rng(0), block_bits=0)


@pytest.mark.parametrize(
    "mech",
    [BitFlip.symmetric(1.0), BitFlip.asymmetric(2.0), BitFlip.oue(1.5), BitFlip(0.7, 0.2)],
    ids=lambda m: m.name,
)
def test_dp_event_is_accounted_as_the_stated_guarantee(mech):
    event = mech.dp_event()
    assert event == BitFlipDpEvent(mech.p, mech.q)
    g = event_guarantee(mech)
    assert event_sides(event) == g.sides
    one = PldAccountant().compose([(event, 1)], 1e-12)
    assert one.sides == g.sides
    assert g.epsilon - 1e-9 <= one.epsilon <= g.epsilon + 1e-4  # largest loss, rounded up
