"""`make run` (`dprec compare --dataset ml-100k --configs configs/ml-100k`) shows dp-pop and
dpals beside the seed systems, each at a per-user epsilon of 1 (issue 24)."""

from __future__ import annotations

from pathlib import Path

from dprec.cli.compare import _compare_configs, _swept_systems, _systems_of

ROOT = Path(__file__).resolve().parents[2]


def test_the_default_comparison_runs_dp_pop_and_dpals_at_user_epsilon_1():
    names = _systems_of("ranking", None)
    assert {"popularity", "dplcf-sp", "fmf-ldp", "dp-pop", "dpals"} <= set(names)
    configs, _ = _compare_configs(names, ROOT / "configs" / "ml-100k", "tuned", None, {})
    for name in ("dp-pop", "dpals"):
        assert configs[name].epsilon == 1.0  # the target per-user epsilon of the whole run
        assert configs[name].aggregation == "secure"
    assert {"dp-pop", "dpals"} <= set(_swept_systems(names, configs, [0.5, 1.0, 3.0]))
