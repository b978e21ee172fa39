"""dpals' run audit rebuilds the count round's noise: refused only when a run has none."""

import pytest

from dprec.errors import DprecError
from dprec.systems.dpals.run_audit import run_noise
from dprec.systems.dpals.system import DpalsConfig


def _params(**extra):
    return {**DpalsConfig(epsilon=1.0, aggregation="secure").__dict__, **extra}


def test_uniform_weighting_without_counts_is_refused():
    with pytest.raises(DprecError, match="no k-hot count round"):
        run_noise(_params(weighting="uniform"), 40, 30, 30)


@pytest.mark.parametrize("extra", [{"head_items": 10}, {"reg_exponent": 0.5}])
def test_a_count_round_switched_on_by_head_items_or_reg_exponent_is_audited(extra):
    noise, k, record = run_noise(_params(weighting="uniform", **extra), 40, 30, 30)
    assert k > 0 and record["share_mu"] > 0
