"""One interface, two sources: the seeded simulation stream and a CSPRNG for devices."""

import numpy as np
import scipy.sparse as sp
from scipy import stats

from dprec.client.randomness import SecureSource, SeededSource
from dprec.mechanisms.bitflip import BitFlip
from dprec.mechanisms.numeric import BinaryMechanism


def test_seeded_source_is_the_simulation_stream():
    s = SeededSource(3)
    a = s.generator().random(4)
    b = s.generator().random(4)
    ref = np.random.default_rng(3)
    np.testing.assert_array_equal(np.concatenate([a, b]), ref.random(8))
    g = np.random.default_rng(0)
    assert SeededSource(g).generator() is g


def test_secure_source_is_fresh_every_time_and_runs_every_mechanism():
    s = SecureSource()
    g1, g2 = s.generator(), s.generator()
    assert type(g1.bit_generator).__name__ == "ChaCha" and s.secure
    assert not np.array_equal(g1.random(8), g2.random(8))
    bits = BinaryMechanism(1.0).sample_bits(np.zeros(10), g1)
    assert bits.shape == (10,)
    flipped = BitFlip.symmetric(1.0).obfuscate_dense(sp.random(3, 50, 0.2, "csr", random_state=0),
                                                     g2, dtype=np.uint8)  # numba path
    assert flipped.shape == (3, 50) and set(np.unique(flipped)) <= {0, 1}


def test_secure_uniforms_pass_a_chi_square_test():
    u = SecureSource().generator().random(100_000)
    counts, _ = np.histogram(u, bins=20, range=(0, 1))
    assert stats.chisquare(counts).pvalue > 1e-4  # fails by chance once in 10,000 runs
