"""The one provenance helper of the experiment scripts: command, UTC date, commit, wall time."""

from __future__ import annotations

import datetime
import shlex

from dprec.evaluation.provenance import Provenance, git_commit, run_command, utc_date


def test_the_command_reruns_the_script_with_its_arguments_quoted():
    cmd = run_command("experiments/frontier.py", ["--note", "two words", "--seeds", "3"])
    assert cmd == ".venv/bin/python experiments/frontier.py --note 'two words' --seeds 3"
    assert shlex.split(cmd)[3] == "two words"
    assert run_command("x.py", [], prefix=("nice", ".venv/bin/python")) == \
        "nice .venv/bin/python x.py"


def test_the_date_is_utc_whatever_the_zone_of_the_clock():
    moment = datetime.datetime(2026, 11, 29, 11, 5, tzinfo=datetime.timezone(
        datetime.timedelta(hours=2)))
    assert utc_date(moment) == "2026-11-29 09:05 UTC"


def test_no_commit_outside_a_checkout(tmp_path):
    assert git_commit(tmp_path) is None


def test_the_record_holds_all_four_and_the_clock_runs():
    prov = Provenance("cmd", "2026-11-29 09:05 UTC", None, started=0.0)
    doc = prov.to_json()
    assert set(doc) == {"command", "date", "commit", "wall_s"}
    assert doc["wall_s"] > 0
    assert prov.markdown_lines() == ["Command: `cmd`  ",
                                     "Date: 2026-11-29 09:05 UTC, commit unknown"]
    started = Provenance.start("s.py", [])
    assert started.command == ".venv/bin/python s.py" and started.date.endswith(" UTC")
