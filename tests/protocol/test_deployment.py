"""Every deployable system is one descriptor (issue 22 §1), found by its name in the one
registry (issue 32 §1): the layers that deploy a protocol (services, client SDK, distributed,
protocol) know no system by name, and a device never loads a system's server half."""

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dprec
from dprec.errors import DprecError
from dprec.protocol.deployment import Deployment, Serving
from dprec.systems.deployable import (
    ProtocolInfo,
    deployable_packages,
    deployable_systems,
    deployment,
    deployments,
    family_deployment,
    serving,
    serving_of,
)
from dprec.systems.dplcf.system import LocalItemCFConfig
from dprec.systems.fmf.system import FMFConfig
from dprec.systems.registry import SYSTEMS

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
    return [ProtocolInfo("dplcf-sp", 20, LocalItemCFConfig(neighbours=3)),
            ProtocolInfo("fmf-ldp", 30, FMFConfig(epochs=3, k=4, factors=3))]


def test_each_registered_system_has_one_descriptor_and_one_server_half():
    ds = deployments()
    packages = deployable_packages()
    assert len(ds) == len(packages) and len({d.name for d in ds}) == len(ds)
    for d, package in zip(ds, packages, strict=True):
        assert isinstance(d, Deployment) and package.rpartition(".")[2] == d.name
        assert family_deployment(d.name) is d
        assert d.broadcast_artefact in d.artefacts
        assert d.default_mechanisms <= set(d.noisy)
    assert [i.deployment.name for i in _infos()] == ["dplcf", "fmf"]
    for name in deployable_systems():
        assert isinstance(serving(name), Serving)
        assert deployment(name) in ds
    # the packages a device finds are exactly those the specs name
    assert {SYSTEMS[n].deploy for n in deployable_systems()} == set(packages)


def test_a_system_that_runs_in_process_only_is_refused_by_name():
    with pytest.raises(DprecError, match="runs in process only"):
        ProtocolInfo("ldp-pop", 10, {"k": 3})
    with pytest.raises(DprecError, match="unknown system"):
        ProtocolInfo("no-such-system", 10, {})


def test_a_published_family_is_one_of_the_registered_packages():
    doc = _infos()[0].to_json()
    assert ProtocolInfo.from_json(doc) == _infos()[0]
    for family in ("nope", "registry", "dplcf.deploy", 3):
        with pytest.raises(DprecError, match="family must be one of"):
            ProtocolInfo.from_json({**doc, "family": family})


def test_the_server_half_keeps_the_broadcast_losslessly():
    from dprec.protocol.aggregation import make_aggregator
    for info in _infos():
        serving = info.serving()
        role = serving.server_role(info, make_aggregator("mean"))
        role_broadcast = role.start(np.random.default_rng(0))
        if role_broadcast is None:  # DPLCF: nothing until its round
            continue
        body = serving.encode_broadcast(info, role_broadcast, 0)
        np.testing.assert_array_equal(serving.decode_broadcast(info, body), role_broadcast)


DEVICE = """
import sys
from dprec.client import DevicePolicy
from dprec.systems.deployable import ProtocolInfo
infos = [ProtocolInfo.from_json(i) for i in %r]
for info in infos:
    terms = DevicePolicy().read(info)
    assert terms.build_mechanism() is not None
bad = sorted(m for m in sys.modules
             if m.rsplit(".", 1)[-1] in ("server", "serve", "system", "specs"))
assert not bad, bad
print("ok")
"""


def test_a_device_reads_every_descriptor_without_loading_a_server_half():
    docs = [i.to_json() for i in _infos()]
    out = subprocess.run([sys.executable, "-c", DEVICE % (docs,)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_serving_of_takes_the_most_specific_role_type():
    """dp-fedavg's server subclasses FCF's: its own server half, not FCF's, must answer."""
    from dprec.systems.dp_fedavg.server import FedAvgServer
    from dprec.systems.fmf.server import FactorServer
    assert issubclass(FedAvgServer, FactorServer)
    role = FedAvgServer.__new__(FedAvgServer)
    assert serving_of(role).role_type is FedAvgServer
