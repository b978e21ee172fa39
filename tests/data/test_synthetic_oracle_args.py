"""The oracles take the generators' own arguments (defaults from the generator's signature,
one home): non-default model arguments are replayed, unknown ones refused."""

from __future__ import annotations

import numpy as np
import pytest

from dprec.data.synthetic import factor_side_features, synthetic, synthetic_truth
from dprec.data.synthetic_drift import DriftParams, synthetic_drift, synthetic_drift_truth
from dprec.errors import DataError

_MODEL = {"rank": 4, "affinity_scale": 1.5, "spectrum_decay": 0.5, "activity_sigma": 0.8,
          "min_user_interactions": 10}


def _sd(rank: int, scale: float, decay: float) -> np.ndarray:
    spectrum = np.arange(1, rank + 1, dtype=np.float64) ** -decay
    return np.sqrt(scale * spectrum / np.linalg.norm(spectrum)).astype(np.float32)


@pytest.mark.parametrize(("make", "oracle", "extra"), [
    (synthetic, synthetic_truth, {"popularity_exponent": 0.9}),
    (synthetic_drift, synthetic_drift_truth, {"params": DriftParams(new_item_share=0.3)}),
])
def test_the_oracle_replays_non_default_arguments(make, oracle, extra):
    kw = {**_MODEL, **extra}
    ds = make(200, 150, 5000, rng=9, batch_elements=30_000, **kw)
    truth = oracle(200, 150, 5000, rng=9, **kw)
    assert truth.user_factors.shape == (200, 4)
    users, items = factor_side_features(truth.user_factors, truth.item_factors,
                                        _sd(4, 1.5, 0.5))
    assert users.equals(ds.user_features) and items.equals(ds.item_features)
    default = oracle(200, 150, 5000, rng=9, **extra)
    assert default.user_factors.shape == (200, 16)  # the generator's default rank


def test_the_drift_oracle_sees_the_release_share():
    few = synthetic_drift_truth(200, 150, 5000, rng=2, params=DriftParams(new_item_share=0.1))
    many = synthetic_drift_truth(200, 150, 5000, rng=2, params=DriftParams(new_item_share=0.4))
    assert np.isfinite(few.release).sum() == 15 and np.isfinite(many.release).sum() == 60


@pytest.mark.parametrize(("oracle", "bad"), [
    (synthetic_truth, {"ranks": 4}),
    (synthetic_drift_truth, {"popularity_exponent": 1.0}),  # synthetic's, not drift's
])
def test_the_oracle_refuses_an_argument_its_generator_does_not_take(oracle, bad):
    with pytest.raises(DataError, match=oracle.__name__.removesuffix("_truth")):
        oracle(200, 150, 5000, rng=0, **bad)


def test_the_oracle_checks_sizes_and_parameters_like_its_generator():
    with pytest.raises(DataError, match="n_interactions must be between"):
        synthetic_truth(100, 50, 100, rng=0)
    with pytest.raises(DataError, match="new_item_share"):
        synthetic_drift_truth(100, 100, 3000, rng=0, params=DriftParams(new_item_share=0.6))
