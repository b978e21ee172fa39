import pytest

from dprec.errors import DprecError
from dprec.systems.registry import PRIVATE_SYSTEMS, SYSTEMS, SystemOptions, make_system


def test_every_system_builds_with_lower_case_paper_names():
    for name in SYSTEMS:
        assert name == name.lower()
        assert make_system(name).name == name
    assert set(PRIVATE_SYSTEMS) <= set(SYSTEMS)


def test_paper_default_epsilons():
    assert make_system("dplcf-sp").config.epsilon == 1.0
    assert make_system("fmf-ldp").config.epsilon == 2.5
    assert make_system("fmf-ldp", SystemOptions(epsilon=0.5)).config.epsilon == 0.5


def test_overrides_reach_the_config():
    o = SystemOptions(overrides=(("factors", "3"), ("user_budget", "500"), ("exact", "false")))
    cfg = make_system("fmf-ldp", o).config
    assert (cfg.factors, cfg.user_budget, cfg.exact) == (3, 500.0, False)
    bpr = make_system("bpr-mf", SystemOptions(overrides=(("epochs", "7"),)))
    assert bpr.model.config.epochs == 7
    lcf = make_system("dplcf-eb", SystemOptions(overrides=(("batch_size", "64"),)))
    assert lcf.config.batch_size == 64 and lcf.config.estimator == "eb"


def test_bad_overrides_are_refused_with_the_known_names():
    with pytest.raises(DprecError, match="unknown parameter.*colour.*known: factors"):
        make_system("fmf-ldp", SystemOptions(overrides=(("colour", "red"),)))
    with pytest.raises(DprecError, match="factors must be a int"):
        make_system("fmf-ldp", SystemOptions(overrides=(("factors", "five"),)))
    with pytest.raises(DprecError, match="no parameters"):
        make_system("random", SystemOptions(overrides=(("k", "1"),)))
    with pytest.raises(DprecError, match="unknown system"):
        make_system("dplcf")
