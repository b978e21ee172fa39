"""The sharded backend takes a system's adapter from its descriptor (issue 22 §1)."""


from dprec.distributed.shards import adapter_for
from dprec.protocol.aggregation import make_aggregator
from dprec.protocol.engine import PassThrough, ShufflingProxy
from dprec.systems.deployable import ProtocolInfo
from dprec.systems.dplcf.system import LocalItemCFConfig
from dprec.systems.fmf.system import FMFConfig


def test_each_server_half_names_the_adapter_the_backend_builds():
    cases = [(ProtocolInfo("dplcf-sp", 20, LocalItemCFConfig(neighbours=3)),
              PassThrough(), None),
             (ProtocolInfo("fmf-ldp", 30, FMFConfig(epochs=3, k=4, factors=3)),
              ShufflingProxy(2), 4)]
    for info, proxy, k in cases:
        serving = info.serving()
        role = serving.server_role(info, make_aggregator("mean"))
        assert isinstance(role, serving.role_type)
        adapter = adapter_for(role, 50, proxy, k)
        assert type(adapter) is serving.shard_adapter
