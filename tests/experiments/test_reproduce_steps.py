"""scripts/reproduce.py (``make reproduce``): the step list is well formed, every step's
command names an existing script or dprec command with options it has, and a failing step
makes the run exit non-zero while the other steps still write their results."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest
import typer

from dprec.cli import app

ROOT = Path(__file__).resolve().parents[2]


def _load_reproduce():
    spec = importlib.util.spec_from_file_location("reproduce_script",
                                                  ROOT / "scripts" / "reproduce.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module


reproduce = _load_reproduce()


def _flags(argv: tuple[str, ...]) -> list[str]:
    return [a for a in argv if a.startswith("--")]


def test_steps_are_unique_and_complete() -> None:
    names = [s.name for s in reproduce.STEPS]
    assert len(names) == len(set(names))
    for s in reproduce.STEPS:
        assert re.fullmatch(r"[a-z0-9][a-z0-9-]*", s.name), s.name
        assert re.fullmatch(r"00[0-4]|[a-z][a-z0-9-]*", s.folder), s.folder
        assert "{out}" in s.argv, f"{s.name} does not write into its scratch folder"
        assert s.outputs and s.about and s.timeout_s > 0


def test_every_seed_has_a_step() -> None:
    assert {s.folder for s in reproduce.STEPS} >= {"000", "001", "002", "003", "004"}


def test_each_script_step_names_an_existing_script_and_its_options() -> None:
    scripts = [s for s in reproduce.STEPS if s.argv[0] == "{py}"]
    assert scripts
    for s in scripts:
        path = ROOT / s.argv[1]
        assert path.is_file(), f"{s.name}: {s.argv[1]} does not exist"
        source = path.read_text()
        for flag in _flags(s.argv):
            assert f'"{flag}"' in source, f"{s.name}: {s.argv[1]} has no option {flag}"


def test_each_cli_step_names_a_dprec_command_and_its_options() -> None:
    group = typer.main.get_command(app)
    cli = [s for s in reproduce.STEPS if s.argv[0] == "{dprec}"]
    assert cli
    for s in cli:
        command = group.commands.get(s.argv[1])
        assert command is not None, f"{s.name}: no dprec command {s.argv[1]!r}"
        opts = {o for p in command.params for o in p.opts}
        for flag in _flags(s.argv):
            assert flag in opts, f"{s.name}: dprec {s.argv[1]} has no option {flag}"


def _writer(name: str, folder: str, code: str, outputs=("*.json",)):
    return reproduce.Step(name, folder, ("{py}", "-c", code, "{out}"), outputs, "test step",
                          timeout_s=60)


def test_a_failing_step_exits_non_zero_and_the_others_still_write(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write = ("import json, sys, pathlib; "
             "pathlib.Path(sys.argv[1], 'r.json').write_text(json.dumps({'hr': 0.5}))")
    steps = (
        _writer("before", "000", write),
        reproduce.Step("broken", "001",
                       ("{py}", "-c", "import sys; print('boom'); sys.exit(3)", "{out}"),
                       ("*.json",), "fails", timeout_s=60),
        _writer("after", "002", write),
    )
    monkeypatch.setattr(reproduce, "STEPS", steps)
    docs, scratch = tmp_path / "docs", tmp_path / "scratch"
    code = reproduce.main(["--docs", str(docs), "--scratch", str(scratch)])
    assert code == 1
    for folder, name in (("000", "before"), ("002", "after")):
        assert json.loads((docs / folder / name / "r.json").read_text()) == {"hr": 0.5}
        meta = json.loads((docs / folder / name / "command.json").read_text())
        assert meta["status"] == "ok" and meta["files"] == ["r.json"]
        assert meta["date"] and meta["command"].startswith(".venv/bin/python -c ")
    broken = json.loads((docs / "001" / "broken" / "command.json").read_text())
    assert broken["status"] == "failed" and broken["returncode"] == 3
    assert "boom" in (docs / "001" / "broken" / "log.txt").read_text()
    summary = json.loads((docs / "reproduce.json").read_text())
    assert [(e["name"], e["status"]) for e in summary["steps"]] == [
        ("before", "ok"), ("broken", "failed"), ("after", "ok")]


def test_a_step_without_its_outputs_fails_and_big_files_are_left_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    size = reproduce.MAX_FILE_BYTES + 1
    big = f"import sys, pathlib; pathlib.Path(sys.argv[1], 'big.json').write_text('x' * {size})"
    monkeypatch.setattr(reproduce, "STEPS", (_writer("big", "003", big),
                                             _writer("silent", "004", "pass")))
    docs = tmp_path / "docs"
    assert reproduce.main(["--docs", str(docs), "--scratch", str(tmp_path / "s")]) == 1
    meta = json.loads((docs / "003" / "big" / "command.json").read_text())
    assert meta["files"] == [] and meta["left_out"][0].startswith("big.json")
    assert not (docs / "003" / "big" / "big.json").exists()
    assert json.loads((docs / "004" / "silent" / "command.json").read_text())["status"] == \
        "failed"


def test_only_runs_the_named_steps_and_keeps_the_other_entries(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write = "import sys, pathlib; pathlib.Path(sys.argv[1], 'a.json').write_text('{}')"
    monkeypatch.setattr(reproduce, "STEPS", (_writer("one", "000", write),
                                             _writer("two", "001", write)))
    docs = tmp_path / "docs"
    args = ["--docs", str(docs), "--scratch", str(tmp_path / "s")]
    assert reproduce.main(args) == 0
    assert reproduce.main([*args, "--only", "two"]) == 0
    summary = json.loads((docs / "reproduce.json").read_text())
    assert [e["name"] for e in summary["steps"]] == ["one", "two"]
    with pytest.raises(SystemExit):
        reproduce.main([*args, "--only", "three"])


def test_an_indented_json_over_the_limit_is_kept_without_indentation(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = reproduce.MAX_FILE_BYTES // 20
    code = ("import json, sys, pathlib; pathlib.Path(sys.argv[1], 'r.json').write_text("
            f"json.dumps([[1, 2]] * {rows}, indent=8))")
    monkeypatch.setattr(reproduce, "STEPS", (_writer("wide", "000", code),))
    docs = tmp_path / "docs"
    assert reproduce.main(["--docs", str(docs), "--scratch", str(tmp_path / "s")]) == 0
    assert (tmp_path / "s" / "wide" / "r.json").stat().st_size > reproduce.MAX_FILE_BYTES
    kept = docs / "000" / "wide" / "r.json"
    assert kept.stat().st_size <= reproduce.MAX_FILE_BYTES
    assert json.loads(kept.read_text()) == [[1, 2]] * rows
    meta = json.loads((docs / "000" / "wide" / "command.json").read_text())
    assert meta["shrunk"] == {"r.json": "JSON without indentation"}


def test_a_step_records_the_cpu_time_of_its_command(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spin = ("import json, sys, time, pathlib; t = time.process_time()\n"
            "while time.process_time() - t < 0.3: pass\n"
            "pathlib.Path(sys.argv[1], 'r.json').write_text('{}')")
    monkeypatch.setattr(reproduce, "STEPS", (_writer("spin", "000", spin),))
    docs = tmp_path / "docs"
    assert reproduce.main(["--docs", str(docs), "--scratch", str(tmp_path / "s")]) == 0
    meta = json.loads((docs / "000" / "spin" / "command.json").read_text())
    assert meta["cpu_time_s"] >= 0.3
    assert json.loads((docs / "reproduce.json").read_text())["total_cpu_time_s"] >= 0.3


def test_a_step_whose_data_are_not_here_is_recorded_as_needing_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ML-20M cannot be fetched here: the step is not run, not a failure, and says what to
    run; the next step still runs."""
    monkeypatch.delenv("DPREC_DATA", raising=False)
    monkeypatch.setattr("dprec.data.registry.movielens_cache_path",
                        lambda name: tmp_path / "no-cache" / name)
    write = "import sys, pathlib; pathlib.Path(sys.argv[1], 'a.json').write_text('{}')"
    needs = reproduce.Step("big-data", "dpals", ("{py}", "-c", "raise SystemExit(9)", "{out}"),
                           ("*.json",), "needs ML-20M", timeout_s=60, needs=("ml-20m:gt3.5",))
    monkeypatch.setattr(reproduce, "STEPS", (needs, _writer("after", "000", write)))
    docs = tmp_path / "docs"
    assert reproduce.main(["--docs", str(docs), "--scratch", str(tmp_path / "s")]) == 0
    meta = json.loads((docs / "dpals" / "big-data" / "command.json").read_text())
    assert meta["status"] == reproduce.NEEDS_DATA and meta["returncode"] is None
    assert "dprec data fetch ml-20m" in meta["needs"][0]
    assert not (tmp_path / "s" / "big-data").exists()
    summary = json.loads((docs / "reproduce.json").read_text())
    assert [(e["name"], e["status"]) for e in summary["steps"]] == [
        ("big-data", reproduce.NEEDS_DATA), ("after", "ok")]
    # with the data there (a folder holding ratings.csv), the step runs (and here fails)
    (tmp_path / "d" / "ml-20m").mkdir(parents=True)
    (tmp_path / "d" / "ml-20m" / "ratings.csv").write_text("userId,movieId,rating,timestamp\n")
    monkeypatch.setenv("DPREC_DATA", str(tmp_path / "d"))
    assert reproduce.main(["--docs", str(docs), "--scratch", str(tmp_path / "s"),
                           "--only", "big-data"]) == 1
