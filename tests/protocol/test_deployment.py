"""Every deployable system is one descriptor (issue 22 §1): the layers that deploy a protocol
(services, client SDK, distributed, protocol) know no system by name, and a device never
loads a system's server half."""

import ast
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

import dprec
from dprec.errors import DprecError
from dprec.protocol.deployed import ProtocolInfo
from dprec.protocol.deployment import (
    DEPLOYABLE,
    Deployment,
    Serving,
    deployment_for,
    deployments,
    serving_of,
)
from dprec.systems.dplcf.system import LocalItemCFConfig
from dprec.systems.fmf.system import FMFConfig

ROOT = Path(dprec.__file__).parent
DEPLOYING = ("services", "client", "distributed", "protocol")


def _family_literals(path: Path) -> list[str]:
    """String constants naming a system family in ``path``, outside docstrings."""
    tree = ast.parse(path.read_text())
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                    ast.AsyncFunctionDef))
                  and n.body and isinstance(n.body[0], ast.Expr)
                  and isinstance(n.body[0].value, ast.Constant)}
    return [f"{path.name}:{n.lineno} {n.value!r}" for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and n.value in ("fmf", "dplcf")
            and id(n) not in docstrings]


def test_no_family_switch_is_left_where_protocols_are_deployed():
    found = [hit for pkg in DEPLOYING for f in sorted((ROOT / pkg).glob("*.py"))
             for hit in _family_literals(f)]
    assert not found, found


def test_the_family_check_sees_a_switch(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text('"""Mentions "fmf" in a docstring."""\nif family == "fmf":\n    pass\n')
    assert _family_literals(probe) == ["probe.py:2 'fmf'"]


def _infos():
    return [ProtocolInfo("dplcf-sp", 20, asdict(LocalItemCFConfig(neighbours=3))),
            ProtocolInfo("fmf-ldp", 30, asdict(FMFConfig(epochs=3, k=4, factors=3)))]


def test_each_registered_system_has_one_descriptor_and_one_server_half():
    ds = deployments()
    assert len(ds) == len(DEPLOYABLE) and len({d.name for d in ds}) == len(ds)
    for d, package in zip(ds, DEPLOYABLE, strict=True):
        assert isinstance(d, Deployment) and d.package == package
        assert isinstance(d.serving(), Serving)
        assert d.broadcast_artefact in d.artefacts
        assert d.default_mechanisms <= set(d.noisy)
    assert [i.deployment.name for i in _infos()] == ["dplcf", "fmf"]
    for info in _infos():
        assert deployment_for(info.config) is info.deployment


def test_a_config_no_descriptor_accepts_is_refused():
    with pytest.raises(DprecError, match="only the deployable systems"):
        ProtocolInfo("ldp-svd", 10, {"rank": 3})


def test_the_server_half_keeps_the_broadcast_losslessly():
    from dprec.protocol.aggregation import make_aggregator
    for info in _infos():
        serving = info.deployment.serving()
        role = serving.server_role(info, make_aggregator("mean"))
        role_broadcast = role.start(np.random.default_rng(0))
        if role_broadcast is None:  # DPLCF: nothing until its round
            continue
        body = serving.encode_broadcast(info, role_broadcast, 0)
        np.testing.assert_array_equal(serving.decode_broadcast(info, body), role_broadcast)


DEVICE = """
import sys
from dprec.client import DevicePolicy
from dprec.protocol.deployed import ProtocolInfo
infos = [ProtocolInfo.from_json(i) for i in %r]
for info in infos:
    terms = DevicePolicy().read(info)
    assert terms.build_mechanism() is not None
bad = sorted(m for m in sys.modules if m.rsplit(".", 1)[-1] in ("server", "serve"))
assert not bad, bad
print("ok")
"""


def test_a_device_reads_every_descriptor_without_loading_a_server_half():
    docs = [i.to_json() for i in _infos()]
    out = subprocess.run([sys.executable, "-c", DEVICE % (docs,)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_no_config_of_any_system_is_claimed_by_two_descriptors():
    """``deployment_for`` must not depend on the order of DEPLOYABLE: dp-pop's descriptor
    once accepted every config with ``min_honest`` and ``aggregation`` (dpals', dp-fedavg's)."""
    from dprec.systems.registry import SYSTEMS, make_config
    for name in SYSTEMS:
        config = asdict(make_config(name))
        claimed = [d.name for d in deployments() if d.accepts(config)]
        assert len(claimed) <= 1, (name, claimed)


def test_an_ambiguous_config_is_refused(monkeypatch):
    for d in deployments()[:2]:
        monkeypatch.setattr(type(d), "accepts", lambda self, config: True)
    with pytest.raises(DprecError, match="claimed by 2 deployable systems"):
        deployment_for({"anything": 1})


def test_serving_of_takes_the_most_specific_role_type():
    """dp-fedavg's server subclasses FCF's: its own server half, not FCF's, must answer."""
    from dprec.systems.dp_fedavg.server import FedAvgServer
    from dprec.systems.fmf.server import FactorServer
    assert issubclass(FedAvgServer, FactorServer)
    role = FedAvgServer.__new__(FedAvgServer)
    assert serving_of(role).role_type is FedAvgServer
