"""A server role names its own public parameters (issue 32 §3): ``describe_role`` reads
them off the role (``Server.public``), not off a union of every system's fields."""


from dprec.protocol.aggregation import make_aggregator
from dprec.services.roles import describe_role
from dprec.systems.deployable import ProtocolInfo
from dprec.systems.dplcf.system import LocalItemCFConfig
from dprec.systems.fmf.system import FMFConfig


def _role(info):
    return info.serving().server_role(info, make_aggregator("mean"))


def test_each_role_describes_exactly_the_parameters_it_names_public():
    dplcf = _role(ProtocolInfo("dplcf-sp", 20, LocalItemCFConfig(neighbours=3)))
    fmf = _role(ProtocolInfo("fmf-ldp", 30, FMFConfig(epochs=3, k=4, factors=3)))
    d, f = describe_role(dplcf), describe_role(fmf)
    assert set(d) == {"role", "mechanism", *type(dplcf).public}
    assert (d["role"], d["n_items"], d["neighbours"]) == ("SimilarityServer", 20, 3)
    assert set(f) == {"role", "mechanism", *type(fmf).public}
    assert (f["role"], f["n_items"], f["factors"]) == ("FactorServer", 30, 3)
    assert "neighbours" not in f and "factors" not in d


def test_a_role_without_public_parameters_is_described_by_its_class_and_mechanism():
    class Bare:
        mechanism = None

    assert describe_role(Bare()) == {"role": "Bare", "mechanism": None}
