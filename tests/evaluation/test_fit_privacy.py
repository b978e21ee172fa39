"""A run's privacy is the worst over every fitted (seed, fold) model, number by number."""

import json

import pytest

from dprec.errors import DprecError
from dprec.evaluation.fit_privacy import guarantee_paths, merge_fit_reports


def _g(eps, delta=1e-6, sides="two", mechanism="m", notes=()):
    return {"epsilon": eps, "delta": delta, "level": "user", "sides": sides, "model": "local",
            "mechanism": mechanism, "notes": list(notes)}


def _report(event, user, basic, reads, events, member="inf"):
    return {"system": "s", "true": _g(1.0), "claimed": None,
            "levels": {"event": _g(event), "user": _g(user, mechanism=f"user {user}"),
                       "user_basic": _g(basic, delta=0.0)},
            "item_membership": {"rule": "r", "levels": {"user": _g(member, sides="none")}},
            "max_reads_per_user": reads, "events": events}


def test_each_guarantee_is_the_largest_over_the_fits_not_the_last_fit():
    a = _report(event=1.0, user=64.8, basic=605.0, reads=6050, events=[{"users": 1}])
    b = _report(event=1.2, user=62.6, basic=577.0, reads=5770, events=[{"users": 2}])
    out = merge_fit_reports([a, b], [(0, 0), (0, 1)])
    lv = out["levels"]
    assert lv["user"]["epsilon"] == 64.8 and lv["user"]["mechanism"] == "user 64.8"
    assert lv["user_basic"]["epsilon"] == 605.0
    assert lv["event"]["epsilon"] == 1.2  # the event level's worst is the other fit
    assert "seed 0, fold 0" in lv["user"]["notes"][-1]
    assert "seed 0, fold 1" in lv["event"]["notes"][-1]
    assert out["max_reads_per_user"] == 6050  # any other differing number: its maximum
    assert out["events"] == [{"users": 1}]  # other fields: the fit with the largest user eps
    assert out["true"] == a["true"] and out["item_membership"] == a["item_membership"]
    assert out["fits"]["count"] == 2 and out["fits"]["largest_per_user"] == {"seed": 0,
                                                                             "fold": 0}
    # per fit: only the guarantees that differ, in per_seed order
    assert [(f["seed"], f["fold"]) for f in out["per_fit"]] == [(0, 0), (0, 1)]
    assert set(out["per_fit"][1]["guarantees"]) == {"levels.event", "levels.user",
                                                    "levels.user_basic"}
    assert out["per_fit"][1]["guarantees"]["levels.user_basic"]["epsilon"] == 577.0
    json.dumps(out, allow_nan=False)  # strict JSON


def test_delta_is_the_largest_unknown_wins_and_sides_the_weakest():
    a = {"levels": {"user": _g(2.0, delta=1e-7, sides="two")}}
    b = {"levels": {"user": _g(1.0, delta=1e-5, sides="one")}}
    out = merge_fit_reports([a, b], [(0, 0), (1, 0)])["levels"]["user"]
    assert (out["epsilon"], out["delta"], out["sides"]) == (2.0, 1e-5, "one")
    c = {"levels": {"user": {**_g(1.5, delta=None), "delta_reason": "not measured"}}}
    out = merge_fit_reports([a, c], [(0, 0), (1, 0)])["levels"]["user"]
    assert out["delta"] is None and out["delta_reason"] == "not measured"
    inf = {"levels": {"user": _g("inf", sides="none")}}
    out = merge_fit_reports([a, inf], [(0, 0), (1, 0)])["levels"]["user"]
    assert (out["epsilon"], out["sides"]) == ("inf", "none")


def test_data_independent_reports_are_returned_unchanged():
    a = _report(1.0, 5.0, 5.0, 10, [])
    out = merge_fit_reports([a, json.loads(json.dumps(a))], [(0, 0), (1, 0)])
    assert out == a and "per_fit" not in out and "fits" not in out
    assert merge_fit_reports([None, None], [(0, 0), (1, 0)]) is None
    assert merge_fit_reports([a], [(0, 0)]) == a


def test_a_fit_without_a_report_among_fits_with_one_is_an_error():
    with pytest.raises(DprecError, match=r"fits \[\(1, 0\)\].*no privacy report"):
        merge_fit_reports([_report(1, 2, 3, 4, []), None], [(0, 0), (1, 0)])
    with pytest.raises(DprecError, match="2 reports for 1 fits"):
        merge_fit_reports([None, None], [(0, 0)])


def test_guarantee_paths():
    paths = guarantee_paths(_report(1.0, 2.0, 3.0, 4, []))
    assert set(paths) == {"true", "levels.event", "levels.user", "levels.user_basic",
                          "item_membership.levels.user"}


def test_ties_on_the_whole_profile_are_broken_by_the_values_only_level():
    """laplace-svd: every fold's per-user eps is inf; the other fields come from the fold
    with the largest values-only per-user eps."""
    def rep(values, events):
        return {"levels": {"user": _g("inf", sides="none"), "user_values": _g(values)},
                "events": events}
    out = merge_fit_reports([rep(300.0, ["a"]), rep(311.2, ["b"])], [(0, 0), (0, 1)])
    assert out["fits"]["largest_per_user"] == {"seed": 0, "fold": 1}
    assert out["events"] == ["b"] and out["levels"]["user_values"]["epsilon"] == 311.2
    assert out["levels"]["user"]["epsilon"] == "inf"
