"""The Ray backend gives the local backend's model, log and report bit for bit: 1, 2 and 3
shards (3 shards on 2 CPUs share them), and a shard worker killed mid-round."""

import numpy as np
import pytest
from sharded import batched_log, broadcast_of

from dprec.distributed import LocalBackend
from dprec.systems.registry import make_system

ray = pytest.importorskip("ray")
from dprec.distributed.ray_backend import RayBackend  # noqa: E402

pytestmark = pytest.mark.slow  # every test here starts Ray (a module-wide local cluster)


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(num_cpus=2, object_store_memory=2 * 2**30, include_dashboard=False,
             log_to_driver=False)
    yield
    ray.shutdown()


def _fit(name, params, train, backend):
    model = make_system(name, params)
    model.transport = backend
    return model.fit(train, np.random.default_rng(4))


def _same(a, b):
    assert np.array_equal(broadcast_of(a), broadcast_of(b))
    assert a.events.to_json() == b.events.to_json()
    assert a.privacy_report().to_json() == b.privacy_report().to_json()
    assert a.diagnostics().keys() == b.diagnostics().keys()


@pytest.mark.slow  # three pools of actors to start
def test_dplcf_on_ray_equals_local_with_1_2_and_3_shards(small_train):
    local = _fit("dplcf-sp", {}, small_train, LocalBackend(1, block_size=512))
    for shards in (1, 2, 3):
        # small pieces: the m11 partial (120 x 120 int32) travels and is summed in 4 pieces
        backend = RayBackend(shards=shards, block_size=512, max_piece_bytes=16_000)
        remote = _fit("dplcf-sp", {}, small_train, backend)
        _same(remote, local)
        assert len(backend.peaks) == shards
        assert remote.diagnostics()["upload_bytes_per_user"] == 120 / 8


def test_fmf_ldp_on_ray_equals_local_when_a_worker_is_killed_mid_round(small_train, tmp_path):
    params = {"epochs": 3, "k": 10, "user_budget": 50.0, "allow_no_update": True}
    local = _fit("fmf-ldp", params, small_train, LocalBackend(2, block_size=512))
    marker = tmp_path / "killed"
    # shard 1's worker SIGKILLs itself at the start of round 1; Ray restarts it and retries
    backend = RayBackend(shards=3, block_size=512, fault=(1, 1, str(marker)))
    remote = _fit("fmf-ldp", params, small_train, backend)
    assert marker.exists()  # the worker did die
    _same(remote, local)
    # not counted twice: every client reported in exactly the 2 rounds its budget allows
    assert remote.privacy_report().to_json()["rounds"]["senders_per_round"] == [1500, 1500, 0]


@pytest.mark.slow
def test_piecewise_fmf_ldp_on_ray_equals_local(small_train):
    params = {"epochs": 2, "mechanism": "piecewise"}
    local = _fit("fmf-ldp", params, small_train, LocalBackend(1, block_size=512))
    _same(_fit("fmf-ldp", params, small_train, RayBackend(shards=2, block_size=512)), local)


def test_warm_actors_serve_several_runs_and_a_new_shard_count(small_train):
    params = {"epochs": 2}
    local = _fit("fmf-ldp", params, small_train, LocalBackend(1, block_size=512))
    with RayBackend(shards=2, block_size=512, keep_warm=True) as backend:
        backend.prestart()
        first = list(backend._actors)
        _same(_fit("fmf-ldp", params, small_train, backend), local)
        _same(_fit("fmf-ldp", params, small_train, backend), local)  # reloads its shards
        assert backend._actors == first  # the same two actors served both runs
        backend.shards = 3  # another count: the actors start afresh, all three fit the CPUs
        _same(_fit("fmf-ldp", params, small_train, backend), local)
        assert len(backend._actors) == 3
    assert backend._actors == []


def test_cli_run_on_ray_over_two_seeds_equals_the_local_backend(tmp_path):
    import json

    from typer.testing import CliRunner

    from dprec.cli import app

    docs = []
    for backend in ("local", "ray"):
        res = CliRunner().invoke(app, [
            "run", "fmf-ldp", "--dataset", "synthetic-300x200", "--seeds", "2", "--param",
            "epochs=2", "--backend", backend, "--shards", "2", "--json", "--out",
            str(tmp_path / backend)])
        assert res.exit_code == 0, res.output
        docs.append(json.loads(res.stdout.strip().splitlines()[-1]))
    assert docs[0]["metrics"] == docs[1]["metrics"]
    assert docs[0]["privacy"] == docs[1]["privacy"]


def test_ray_logs_the_engines_events_for_the_proxys_batches(small_train):
    # the driver's server step reads one sum of every report; the log charges what the
    # proxy forwards: one shuffle of all 1,500 senders, or its smallest batch (300)
    for batch_senders, n in ((None, 1500), (400, 300)):
        engine = batched_log(small_train, None, batch_senders)
        remote = batched_log(small_train, RayBackend(shards=2, block_size=512), batch_senders)
        assert remote.to_json() == engine.to_json()
        assert [e.n for e, _ in remote.keys()] == [n]


@pytest.mark.slow  # a pool of actors to start
def test_dp_pop_on_ray_equals_in_process(small_train):
    # each shard sums its clients' noisy k-hot vectors exactly; clients draw from their own
    # generators, so the total is the in-process engine's, not only the local backend's
    engine = _fit("dp-pop", {"k": 3}, small_train, None)
    remote = _fit("dp-pop", {"k": 3}, small_train, RayBackend(shards=3, block_size=512))
    assert np.array_equal(remote.noisy_counts, engine.noisy_counts)
    assert np.array_equal(remote.ranking, engine.ranking)
    assert remote.events.to_json() == engine.events.to_json()
    assert remote.privacy_report().to_json() == engine.privacy_report().to_json()
    assert remote.diagnostics() == engine.diagnostics()


@pytest.mark.slow  # two end-to-end runs
def test_cli_run_dp_pop_on_ray_equals_in_process(tmp_path):
    import json

    from typer.testing import CliRunner

    from dprec.cli import app

    docs = []
    for extra in ([], ["--backend", "ray", "--shards", "2"]):
        res = CliRunner().invoke(app, [
            "run", "dp-pop", "--dataset", "synthetic-300x200", "--seeds", "2", "--param",
            "k=3", "--json", "--out", str(tmp_path / str(len(extra))), *extra])
        assert res.exit_code == 0, res.output
        docs.append(json.loads(res.stdout.strip().splitlines()[-1]))
    assert docs[1]["backend"]["name"] == "ray"
    assert docs[0]["metrics"] == docs[1]["metrics"]
    assert docs[0]["privacy"] == docs[1]["privacy"]
