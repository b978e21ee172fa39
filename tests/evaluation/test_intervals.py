"""95% intervals over seeds (issue 33): Student's t half-widths, and the table cells."""

import pytest

from dprec.evaluation.intervals import (
    format_interval,
    half_width,
    summarise,
    summary_half_width,
)


def test_half_width_is_students_t_over_root_n():
    # t_{0.975, 2} = 4.302653 (published tables); std 1, n 3
    assert half_width(1.0, 3) == pytest.approx(4.302653 / 3 ** 0.5, rel=1e-6)
    assert half_width(0.5, 1) is None


def test_summarise_and_format():
    s = summarise([0.1, 0.2, 0.3])
    assert s["mean"] == pytest.approx(0.2) and s["n"] == 3
    assert s["ci95"] == pytest.approx(4.302653 * 0.1 / 3 ** 0.5, rel=1e-6)
    assert format_interval(s) == "0.2000 ± 0.2484"
    assert format_interval(summarise([0.25])) == "0.2500 (1 seed)"
    assert format_interval(None) == "—"


def test_older_summaries_without_an_interval_use_std_and_the_entry_count():
    old = {"mean": 0.2, "std": 0.1}
    ci, n = summary_half_width(old, 3)
    assert n == 3 and ci == pytest.approx(4.302653 * 0.1 / 3 ** 0.5, rel=1e-6)
    assert format_interval(old, 1) == "0.2000 (1 seed)"
    assert format_interval(old) == "0.2000 ± ?"
