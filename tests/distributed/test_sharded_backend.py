"""The local sharded backend: one model for any number of shards; what it refuses."""

import numpy as np
import pytest
from sharded import broadcast_of

from dprec.distributed import LocalBackend, make_backend
from dprec.errors import DprecError
from dprec.systems.registry import make_system

CASES = [
    ("dplcf-sp", {}),
    ("dplcf-eb", {}),
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
