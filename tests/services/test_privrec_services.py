"""PrivRec and DP-PrivRec deployed through their descriptor alone (issue 22 §1): ``dprec
simulate --transport http`` gives the in-process result (metrics and privacy), and the
report over HTTP states the trusted aggregator."""

from __future__ import annotations

import base64

import numpy as np
import pytest
from starlette.testclient import TestClient
from svc import AUTH, SECRET

from dprec.errors import DprecError
from dprec.protocol.deployment import generator_to_json
from dprec.services.server import ServerSettings, create_server_app
from dprec.systems.deployable import ProtocolInfo
from dprec.systems.privrec.messages import InitialModel, ModelBroadcast
from dprec.systems.privrec.server import ReptileServer
from dprec.systems.registry import make_config

TINY = {"rounds": 3, "clients_per_round": 10, "local_epochs": 1, "finetune_epochs": 1,
        "embedding_dim": 8, "hidden_width": 16, "hidden_layers": 2}


def test_the_server_service_says_it_is_a_trusted_aggregator_and_starts_from_the_initial_model(
        tmp_path):
    cfg = make_config("dp-privrec", {"clients_per_round": 4, "rounds": 2, "n_params": 6})
    info = ProtocolInfo("dp-privrec", 10, cfg)
    theta0, enrolled = np.linspace(-1, 1, 6), np.arange(2, 12)
    initial = base64.b64encode(InitialModel(theta0, enrolled).to_bytes()).decode()

    def start(c, **body):
        return c.post("/v1/start", headers=AUTH,
                      json={"generator": generator_to_json(np.random.default_rng(3)), **body})

    with TestClient(create_server_app(ServerSettings(info, tmp_path, SECRET))) as c:
        assert c.get("/v1/protocol").json()["role"]["trusted_aggregator"] is True
        refused = start(c)
        assert refused.status_code == 422 and "initial model" in refused.json()["error"]
        assert start(c, initial="not base64!").status_code == 422
        assert start(c, initial=initial).status_code == 200
        expected = ReptileServer(theta0, enrolled, None, info.config
                                 ).start(np.random.default_rng(3))
        art = c.get("/v1/artefacts/model")
        assert ModelBroadcast.from_bytes(art.content) == expected
        other = base64.b64encode(InitialModel(theta0 + 1, enrolled).to_bytes()).decode()
        assert start(c, initial=other).status_code == 409
    with pytest.raises(DprecError, match="--autostart.*initial model"):
        create_server_app(ServerSettings(info, tmp_path / "auto", SECRET, autostart=True))
