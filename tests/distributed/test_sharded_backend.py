"""The local sharded backend: one model for any number of shards; what it refuses."""

import numpy as np
import pytest
from sharded import batched_log, broadcast_of

from dprec.distributed import LocalBackend, make_backend
from dprec.errors import DprecError
from dprec.systems.registry import make_system

CASES = [
    ("dplcf-sp", {}),
    ("dplcf-eb", {}),
    # a binding history cap: the capped users' two records reach the log from every shard
    ("dplcf-ap", {"history_cap": 10}),
    ("fmf-ldp", {"epochs": 3, "shuffle_threshold": 50}),
    ("fmf-ldp", {"epochs": 3, "mechanism": "piecewise"}),
    # the ledger stops every client after 2 of 4 rounds: state carried between rounds
    ("fmf-ldp", {"epochs": 4, "k": 10, "user_budget": 50.0}),
]


def _fit(name, params, train, backend):
    model = make_system(name, params)
    model.transport = backend
    return model.fit(train, np.random.default_rng(9))


@pytest.mark.parametrize(("name", "params"), CASES)
def test_the_model_and_privacy_log_do_not_depend_on_the_shard_count(name, params,
                                                                    small_train):
    runs = [_fit(name, params, small_train, LocalBackend(s, block_size=512))
            for s in (1, 2, 3)]
    ref = runs[0]
    for other in runs[1:]:
        assert np.array_equal(broadcast_of(other), broadcast_of(ref))
        assert other.events.to_json() == ref.events.to_json()
        assert other.privacy_report().to_json() == ref.privacy_report().to_json()
        assert other.diagnostics().keys() == ref.diagnostics().keys()
    d = ref.diagnostics()
    if "clients_dropped_by_ledger" in d:  # the shards' ledgers came back to the driver
        assert d["clients_dropped_by_ledger"] == (small_train.shape[0]
                                                  if "user_budget" in params else 0)
    if "upload_bytes_per_user" in d:
        assert d["upload_bytes_per_user"] == 120 / 8


def test_a_sharded_run_is_a_different_draw_than_the_engine(small_train):
    # documented: the block streams are not the engine's single stream
    engine = _fit("dplcf-sp", {}, small_train, None)
    sharded = _fit("dplcf-sp", {}, small_train, LocalBackend(1, block_size=512))
    assert not np.array_equal(broadcast_of(engine), broadcast_of(sharded))
    assert engine.events.counts(engine.mechanism.dp_event(), "interaction").tolist() == \
        sharded.events.counts(sharded.mechanism.dp_event(), "interaction").tolist()


def test_a_capped_run_logs_the_same_events_sharded_and_in_process(small_train):
    engine = _fit("dplcf-ap", {"history_cap": 10}, small_train, None)
    sharded = _fit("dplcf-ap", {"history_cap": 10}, small_train, LocalBackend(2, block_size=512))
    for level in ("user", "event"):
        keys, counts = engine.events.count_matrix(level)
        other_keys, other_counts = sharded.events.count_matrix(level)
        assert keys == other_keys and len(keys) == 2  # the flip and the displaced bit
        assert np.array_equal(counts, other_counts)


def test_the_proxy_threshold_counts_senders_over_all_shards(small_train):
    # 1,500 senders: a threshold of 1,501 refuses every round, 1,500 forwards them
    refused = make_system("fmf-ldp", {"epochs": 2, "shuffle_threshold": 1501,
                                      "allow_no_update": True})
    refused.transport = LocalBackend(3, block_size=512)
    refused.fit(small_train, np.random.default_rng(0))
    assert refused.diagnostics()["epochs_without_update"] == 2
    assert len(refused.events) == 0
    ok = _fit("fmf-ldp", {"epochs": 2, "shuffle_threshold": 1500}, small_train,
              LocalBackend(3, block_size=512))
    assert ok.diagnostics()["epochs_without_update"] == 0
    assert ok.privacy_report().to_json()["rounds"]["senders_per_round"] == [1500, 1500]


def test_what_cannot_be_sharded_is_refused_before_work(small_train):
    fcf = make_system("fcf", {"epochs": 1})
    fcf.transport = LocalBackend(2)
    with pytest.raises(DprecError, match="FCF"):
        fcf.fit(small_train, np.random.default_rng(0))
    with pytest.raises(DprecError, match="backend must be local or ray"):
        make_backend("spark")
    with pytest.raises(DprecError, match="--ray-address needs --backend ray"):
        make_backend("local", address="auto")
    with pytest.raises(DprecError, match="shards"):
        LocalBackend(0)


@pytest.mark.parametrize("mechanism", ["binary", "piecewise"])
def test_a_shards_sums_give_the_step_the_in_process_server_takes(mechanism, small_train):
    """The same reports, summed by a shard or sent through the shuffler's wire format
    (float32 values) to FactorServer.aggregate, move V to the same bits."""
    from dprec.mechanisms.numeric import BinaryMechanism, PiecewiseMechanism
    from dprec.protocol.messages import ShuffledReports, ShuffledValues
    from dprec.protocol.sharding import block_generator
    from dprec.systems.fmf.client import FederatedClients
    from dprec.systems.fmf.server import FactorServer
    from dprec.systems.fmf.shard import FmfAdapter

    mech = BinaryMechanism(2.0) if mechanism == "binary" else PiecewiseMechanism(2.0)
    n_users, n_items = small_train.shape

    def clients():
        return FederatedClients(small_train, factors=4, alpha=1.0, reg=0.1, k=8, clip=1.0,
                                exact=False, mechanism=mech, ledger=None, batch_size=512)

    def server(V):
        s = FactorServer(n_items, 4, 0.05, 0.01, 3, 1.0, 0.1, mech)
        s.V = V.copy()
        return s

    V = np.random.default_rng(0).normal(0.0, 0.1, (n_items, 4))
    adapter = FmfAdapter(n_users, n_items, 4, 8, mech)
    spans = [(0, 0, 700), (1, 700, n_users)]
    sums, partial = adapter.fold_round(clients(), spans, 0, 123, V)
    assert partial.senders == n_users
    sharded = adapter.finish(server(V), sums, partial, 0)

    c = clients()
    msgs = [c.step_rows(V, V.T @ V, a, b, block_generator(123, 0, blk))[0]
            for blk, a, b in spans]
    items = np.concatenate([m.items.ravel() for m in msgs])
    factors = np.concatenate([m.factors.ravel() for m in msgs])
    if mechanism == "binary":
        batch = ShuffledReports(items, factors, np.concatenate([m.bits.ravel() for m in msgs]))
    else:
        values = np.concatenate([m.values.ravel() for m in msgs]).astype(np.float32)
        batch = ShuffledValues(items, factors, values)
    in_process = server(V).aggregate([batch], 0)
    assert np.array_equal(sharded, in_process)


def test_a_shard_refuses_report_values_beyond_the_mechanisms_bound(small_train):
    """The shards' integer grid is planned from the mechanism's bound C: a report past it
    (a poisoned client, say) is refused, never summed into a possibly overflowing int64."""
    from dprec.mechanisms.numeric import PiecewiseMechanism
    from dprec.protocol.batches import ReportBatch
    from dprec.systems.fmf.client import FederatedClients
    from dprec.systems.fmf.shard import FmfAdapter

    mech = PiecewiseMechanism(2.0)

    class Oversized(FederatedClients):
        def step_rows(self, V, gram, start, stop, rng):
            n = stop - start
            zeros = np.zeros((n, 2), np.int64)
            return ReportBatch(np.arange(start, stop), zeros, zeros,
                               values=np.full((n, 2), 10 * mech.scale)), None

    clients = Oversized(small_train, factors=4, alpha=1.0, reg=0.1, k=2, clip=1.0,
                        exact=False, mechanism=mech, ledger=None, batch_size=512)
    adapter = FmfAdapter(small_train.shape[0], small_train.shape[1], 4, 2, mech)
    V = np.zeros((small_train.shape[1], 4))
    with pytest.raises(DprecError, match="exceeds the mechanism's bound"):
        adapter.fold_round(clients, [(0, 0, 100)], 0, 1, V)


@pytest.mark.parametrize("batch_senders", [None, 400])
def test_the_sharded_log_is_the_engines_for_the_same_batches(small_train, batch_senders):
    # 1,500 senders: one shuffle of 1,500, or batches of 400 x 3 and 300 (the smallest)
    engine = batched_log(small_train, None, batch_senders)
    sharded = batched_log(small_train, LocalBackend(3, block_size=512), batch_senders)
    assert sharded.to_json() == engine.to_json()
    (event, _), = engine.keys()
    assert event.n == (1500 if batch_senders is None else 300)
