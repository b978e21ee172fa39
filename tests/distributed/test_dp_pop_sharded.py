"""dp-pop on the sharded backend (issue 23 §3): each shard adds its clients' noisy k-hot
vectors exactly (the secure sum's output), and the run gives the in-process model, event log
and privacy report bit for bit, for any number of shards."""

import json

import numpy as np
import pytest
import scipy.sparse as sp
from typer.testing import CliRunner

from dprec.cli import app
from dprec.data.synthetic import synthetic
from dprec.distributed import LocalBackend
from dprec.distributed.shards import adapter_for
from dprec.errors import DprecError
from dprec.protocol.aggregation import make_aggregator
from dprec.protocol.engine import ShufflingProxy
from dprec.protocol.sharding import IntegerSumAdapter, RoundPartial
from dprec.systems.deployable import ProtocolInfo
from dprec.systems.dp_pop import system as dp_pop_system
from dprec.systems.dp_pop.proxy import ExactSumProxy
from dprec.systems.dp_pop.system import DpPopConfig
from dprec.systems.registry import make_system

runner = CliRunner()


@pytest.fixture(scope="module")
def pop_train() -> sp.csr_matrix:
    """500 users x 60 items: 4 blocks of 128 clients (the last one partial)."""
    return synthetic(500, 60, 12_000, rng=3).matrix.tocsr()


_CALIBRATED: dict[object, object] = {}


@pytest.fixture(autouse=True)
def calibrate_once(monkeypatch):
    """Every fit of one config calibrates the same round: do it once (seconds each)."""
    calibrate = dp_pop_system.calibrate

    def cached(config, n_items, n_clients):
        key = (config, n_items, n_clients)  # a frozen config is hashable
        if key not in _CALIBRATED:
            _CALIBRATED[key] = calibrate(config, n_items, n_clients)
        return _CALIBRATED[key]

    monkeypatch.setattr(dp_pop_system, "calibrate", cached)


def _fit(train, backend, timestamps=None, **params):
    model = make_system("dp-pop", {"k": 5, **params})
    model.transport = backend
    if timestamps is not None:
        model.set_timestamps(timestamps)
    return model.fit(train, np.random.default_rng(4))


def _same(a, b):
    assert np.array_equal(a.noisy_counts, b.noisy_counts)
    assert np.array_equal(a.ranking, b.ranking)
    assert a.events.to_json() == b.events.to_json()
    assert a.privacy_report().to_json() == b.privacy_report().to_json()
    assert a.diagnostics() == b.diagnostics()


def test_dp_pop_sharded_equals_in_process_with_1_2_and_3_shards(pop_train):
    inproc = _fit(pop_train, None)
    assert inproc.diagnostics()["contributors"] == 500
    for shards in (1, 2, 3):
        _same(_fit(pop_train, LocalBackend(shards, block_size=128)), inproc)


def test_trusted_dp_pop_sharded_equals_in_process(pop_train):
    """The trusted curator is the server's: the clients' exact k-hot vectors are summed in
    the shards and the curator noises the total, as in process."""
    inproc = _fit(pop_train, None, aggregation="trusted")
    _same(_fit(pop_train, LocalBackend(3, block_size=128), aggregation="trusted"), inproc)


def test_dp_pop_sharded_keeps_recency_sampling_and_min_honest(pop_train):
    rng = np.random.default_rng(0)
    ts = pop_train.copy().astype(np.float64)
    ts.data = rng.integers(0, 50, ts.nnz).astype(np.float64)  # ties broken by the item id
    params = {"sampling": "recency", "min_honest": 200}
    inproc = _fit(pop_train, None, sp.csr_matrix(ts), **params)
    _same(_fit(pop_train, LocalBackend(2, block_size=128), sp.csr_matrix(ts), **params),
          inproc)


def test_the_descriptor_names_the_integer_sum_adapter():
    info = ProtocolInfo("dp-pop", 40, DpPopConfig(k=3, n_clients=60))
    serving = info.serving()
    role = serving.server_role(info, make_aggregator("mean"))
    adapter = adapter_for(role, 60, ExactSumProxy(60))
    assert type(adapter) is serving.shard_adapter is IntegerSumAdapter
    with pytest.raises(DprecError, match="summing proxy"):
        adapter_for(role, 60, ShufflingProxy(2))


def test_a_sharded_round_below_the_proxy_threshold_releases_nothing():
    proxy = ExactSumProxy(10)
    adapter = IntegerSumAdapter(4, proxy)

    class Refuses:
        def aggregate(self, batches, round):
            raise AssertionError("the server must not be asked")

    assert adapter.finish(Refuses(), {"sum": np.ones(4, np.int64)},
                          RoundPartial(senders=9), 0) is None
    assert not proxy.forwarded and proxy.batches == []


def _run(tmp_path, *extra):
    res = runner.invoke(app, ["run", "dp-pop", "--dataset", "synthetic-200x300", "--seeds",
                              "1", "--param", "k=5", "--json", "--out", str(tmp_path), *extra])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # two end-to-end runs each
@pytest.mark.parametrize("aggregation", ["secure", "trusted"])
def test_dprec_run_dp_pop_on_the_local_backend_equals_in_process(tmp_path, aggregation):
    agg = ("--param", f"aggregation={aggregation}")
    inproc = _run(tmp_path, *agg)
    sharded = _run(tmp_path, *agg, "--backend", "local", "--shards", "3")
    assert sharded["backend"]["name"] == "local"
    assert sharded["metrics"] == inproc["metrics"]
    assert sharded["privacy"] == inproc["privacy"]
