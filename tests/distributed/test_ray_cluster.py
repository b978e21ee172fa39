"""A two-node Ray cluster on this machine (ray.cluster_utils.Cluster, as Ray's own tests
do): one shard actor per node, the same model as the local backend."""

import numpy as np
import pytest
from sharded import broadcast_of

from dprec.distributed import LocalBackend
from dprec.systems.registry import make_system

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

from dprec.distributed.ray_backend import RayBackend  # noqa: E402


@pytest.fixture(scope="module")
def two_nodes():
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "object_store_memory": 2**30, "include_dashboard": False})
    cluster.add_node(num_cpus=1, object_store_memory=2**30)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    yield cluster
    ray.shutdown()
    cluster.shutdown()


@pytest.mark.slow
def test_two_nodes_give_the_local_model(two_nodes, small_train):
    assert len([n for n in ray.nodes() if n["Alive"]]) == 2
    # 1 CPU per node and 1 CPU per shard: the two shard actors run on different nodes
    assert ray.cluster_resources()["CPU"] == 2
    params = {"epochs": 2}
    models = []
    for backend in (LocalBackend(1, block_size=512), RayBackend(shards=2, block_size=512)):
        m = make_system("fmf-ldp", params)
        m.transport = backend
        models.append(m.fit(small_train, np.random.default_rng(8)))
    assert np.array_equal(broadcast_of(models[0]), broadcast_of(models[1]))
    assert models[0].events.to_json() == models[1].events.to_json()
