"""`dprec run --backend local`: the same metrics for any shard count; bad options refused."""

import json

from typer.testing import CliRunner

from dprec.cli import app

runner = CliRunner()
DS = "synthetic-300x200"


def _run(tmp_path, *extra):
    res = runner.invoke(app, ["run", "fmf-ldp", "--dataset", DS, "--seeds", "1", "--param",
                              "epochs=2", "--json", "--out", str(tmp_path), *extra])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_run_with_the_local_backend_records_it_and_ignores_the_shard_count(tmp_path):
    one = _run(tmp_path, "--backend", "local")
    three = _run(tmp_path, "--backend", "local", "--shards", "3")
    assert three["backend"] == {"name": "local", "shards": 3, "ray_address": None}
    assert one["metrics"] == three["metrics"]
    assert one["privacy"] == three["privacy"]


def test_backend_options_are_checked_before_work(tmp_path):
    for args, msg in ((["--shards", "2"], "need --backend"),
                      (["--backend", "spark"], "backend must be local or ray"),
                      (["--backend", "local", "--ray-address", "auto"], "needs --backend ray")):
        res = runner.invoke(app, ["run", "fmf-ldp", "--dataset", DS, "--seeds", "1",
                                  "--out", str(tmp_path), *args])
        assert res.exit_code == 2 and msg in res.output, res.output
    res = runner.invoke(app, ["run", "popularity", "--dataset", DS, "--seeds", "1",
                              "--backend", "local", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "no sharded backend" in res.output


def test_an_unreachable_ray_cluster_is_a_clear_error_before_the_data_load(tmp_path,
                                                                          monkeypatch):
    import pytest
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        pytest.skip("a Ray is already running in this process")

    def refuse(*args, **kwargs):
        raise ConnectionError("Could not find any running Ray instance.")

    monkeypatch.setattr(ray, "init", refuse)
    res = runner.invoke(app, ["run", "fmf-ldp", "--dataset", DS, "--seeds", "1", "--backend",
                              "ray", "--ray-address", "auto", "--out", str(tmp_path)])
    assert res.exit_code == 2, res.output
    assert "could not join the Ray cluster at 'auto'" in res.output
    assert "ray start --head" in res.output
    assert not list(tmp_path.iterdir())  # nothing was run or written
