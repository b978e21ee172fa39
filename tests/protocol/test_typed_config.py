"""A published protocol carries its system's typed frozen config (issue 32 §1): one config
class per system, importable without server code, encoded as the JSON object of its fields
(the wire bytes of before) and decoded strictly (unknown, missing and ill-typed keys
refused)."""

import json
import subprocess
import sys
from dataclasses import asdict, fields, replace

import pytest

from dprec.errors import DprecError
from dprec.systems.config_json import config_from_json, config_to_json, field_kinds
from dprec.systems.deployable import ProtocolInfo, deployable_systems, deployment
from dprec.systems.dp_pop.config import DpPopConfig
from dprec.systems.fmf.config import FMFConfig
from dprec.systems.ldp_svd.config import LaplaceRRSVDConfig
from dprec.systems.registry import SYSTEMS


def _sized(name: str) -> object:
    """``name``'s default config with the sizes a simulation states."""
    cfg = SYSTEMS[name].default_config()
    sizes = {"n_clients": 30, "n_users": 30, "n_params": 40, "rating_min": 1.0,
             "rating_max": 5.0}
    return replace(cfg, **{k: v for k, v in sizes.items()
                           if k in {f.name for f in fields(cfg)}})


@pytest.mark.parametrize("name", deployable_systems())
def test_the_descriptor_names_the_registry_s_config_class(name):
    """One definition: the class a device decodes into is the class the registry builds."""
    assert deployment(name).config_type(name) is SYSTEMS[name].config
    field_kinds(SYSTEMS[name].config)  # every field is a JSON scalar


@pytest.mark.parametrize("name", deployable_systems())
def test_a_description_round_trips_with_the_bytes_of_before(name):
    cfg = _sized(name)
    info = ProtocolInfo(name, 20, cfg)
    assert info.config is cfg
    doc = info.to_json()
    assert json.dumps(doc["config"]) == json.dumps(asdict(cfg))  # the wire bytes of before
    back = ProtocolInfo.from_json(json.loads(json.dumps(doc)))
    assert type(back.config) is type(cfg) and back.config == cfg
    assert back.fingerprint() == info.fingerprint()
    assert json.dumps(back.to_json()) == json.dumps(doc)


def test_an_integer_for_a_float_field_is_kept_as_sent():
    doc = {**asdict(DpPopConfig(n_clients=30)), "epsilon": 2}
    cfg = config_from_json(DpPopConfig, doc)
    assert cfg.epsilon == 2 and isinstance(cfg.epsilon, int)
    assert config_to_json(cfg) == doc


@pytest.mark.parametrize("change, match", [
    ({"surprise": 1}, "does not have: surprise"),
    ({"k": "50"}, r"config.k must be an integer, got '50'"),
    ({"k": True}, r"config.k must be an integer, got True"),
    ({"k": 2.5}, r"config.k must be an integer, got 2.5"),
    ({"epsilon": "1"}, r"config.epsilon must be a number, got '1'"),
    ({"epsilon": None}, r"config.epsilon must be a number, got None"),
    ({"sampling": "newest"}, r"config.sampling must be 'uniform' or 'recency', got 'newest'"),
    ({"n_clients": [30]}, r"config.n_clients must be an integer or null, got \[30\]"),
    ({"epsilon": -1.0}, "epsilon must be finite and > 0"),  # the class's own validation
])
def test_a_published_config_that_is_not_the_class_is_refused(change, match):
    info = ProtocolInfo("dp-pop", 20, DpPopConfig(n_clients=30))
    doc = info.to_json()
    doc["config"] = {**doc["config"], **change}
    with pytest.raises(DprecError, match=match):
        ProtocolInfo.from_json(doc)


def test_a_missing_field_is_refused():
    doc = ProtocolInfo("dp-pop", 20, DpPopConfig(n_clients=30)).to_json()
    del doc["config"]["validity"]
    with pytest.raises(DprecError, match="lacks DpPopConfig's fields: validity"):
        ProtocolInfo.from_json(doc)
    doc["config"] = [1, 2]
    with pytest.raises(DprecError, match="config must be a JSON object"):
        ProtocolInfo.from_json(doc)


def test_another_system_s_config_class_is_refused():
    with pytest.raises(DprecError, match="fmf-ldp's config must be a FMFConfig, got DpPopConfig"):
        ProtocolInfo("fmf-ldp", 20, DpPopConfig(n_clients=30))
    assert type(ProtocolInfo("fmf-ldp", 20, FMFConfig()).config) is FMFConfig
    with pytest.raises(DprecError, match="dp-pop's config must be a DpPopConfig, got dict"):
        ProtocolInfo("dp-pop", 20, asdict(DpPopConfig(n_clients=30)))  # no dict configs


def test_laplace_rr_svd_decodes_into_its_own_class():
    cfg = LaplaceRRSVDConfig(n_users=5, rating_min=1.0, rating_max=5.0)
    doc = ProtocolInfo("laplace-rr-svd", 20, cfg).to_json()
    assert ProtocolInfo.from_json(doc).config == cfg
    doc["system"] = "ldp-svd"  # the same family, another class: eps1 is not its field
    with pytest.raises(DprecError, match="does not have: eps1, eps2"):
        ProtocolInfo.from_json(doc)


CONFIGS = """
import sys
from dprec.systems.deployable import deployable_packages
import importlib
for p in deployable_packages():
    importlib.import_module(p + ".config")
bad = sorted(m for m in sys.modules if m.startswith("dprec.")
             and m.rsplit(".", 1)[-1] in ("server", "serve", "system", "specs"))
assert not bad, bad
print("ok")
"""


def test_every_config_module_imports_without_server_or_system_code():
    out = subprocess.run([sys.executable, "-c", CONFIGS], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
