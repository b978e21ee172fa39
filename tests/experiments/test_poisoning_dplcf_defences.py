"""experiments/poisoning.py's DPLCF defences (issue 26): which defence applies to which
protocol, and the adaptive attack shaped from the defence's public parameters; the table
script writes the targets and the false positives."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import replace
from pathlib import Path

from dprec.systems.dplcf.bit_screens import BitLaw, ones_range, screen_threshold
from dprec.systems.registry import make_config

ROOT = Path(__file__).resolve().parents[2]


def _module(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "experiments" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


poisoning = _module("poisoning")
table_script = _module("poisoning_defences_table")


def test_each_defence_runs_on_its_own_protocol():
    dplcf = make_config("dplcf-sp")
    fmf = make_config("fmf-ldp")
    assert poisoning.defence_applies(dplcf, "dplcf-range")
    assert poisoning.defence_applies(dplcf, "mean")
    assert not poisoning.defence_applies(dplcf, "trimmed:0.1")
    assert not poisoning.defence_applies(fmf, "dplcf-screen")
    assert poisoning.defence_applies(fmf, "median-of-means")


def test_the_adaptive_shape_is_the_servers_public_range_and_threshold():
    cfg = make_config("dplcf-sp")
    mech = cfg.mechanism()
    law = BitLaw(500, mech.p, mech.q, 500)
    assert poisoning.dplcf_adaptive(cfg, 800, 500) is None  # the mean: nothing to dodge
    shape = poisoning.dplcf_adaptive(replace(cfg, aggregator="dplcf-range+screen:12"), 800, 500)
    bounds = ones_range(law, 1e-9)
    assert shape == {"ones_range": (bounds.low, bounds.high),
                     "screen": (12, screen_threshold(800, 500, mech.p, 12, 1e-9))}
    capped = poisoning.dplcf_adaptive(replace(cfg, aggregator="dplcf-range",
                                              history_cap=50), 800, 500)
    assert capped["ones_range"][1] < bounds.high


def test_the_table_states_the_targets_and_false_positives():
    point = {"fraction": 0.0, "sampled": {"mean": 0.2, "std": 0.01}, "removed": [0, 1]}
    at5 = {**point, "fraction": 0.05, "sampled": {"mean": 0.15, "std": 0.02}, "removed": [9]}
    doc = {"fractions": [0.0, 0.05], "seeds": [0, 1], "strategies": ["promote"],
           "dataset": {"name": "toy", "users": 100}, "dprec_version": "x",
           "systems": {"dplcf-sp [mean]": {"system": "dplcf-sp", "defence": "mean",
                                           "strategies": {"promote": [point, at5]}},
                       "dplcf-sp [dplcf-range]": {
                           "system": "dplcf-sp", "defence": "dplcf-range",
                           "strategies": {"promote": [point, at5]},
                           "adaptive": {"promote": [point, at5]},
                           "removed_at_0": [0, 1]}}}
    text = table_script.table(doc, "cmd")
    assert "| dplcf-range | promote | adaptive | 0.200 ± 0.010 | 0.150 ± 0.020 |" in text
    assert "| dplcf-range | promote | plain | 1.000 | 0.750 |" in text
    assert "dplcf-range: [0, 1] uploads removed per seed" in text
