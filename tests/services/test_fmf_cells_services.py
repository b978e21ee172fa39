"""FMF-LDP ``cells=assigned`` over the services (issue 26 §1): the proxy service checks each
upload's cells against the round's broadcast and the operator's key, and ``dprec simulate``
gives the in-process run's numbers over HTTP."""

from __future__ import annotations

import numpy as np
import pytest
from svc import OPERATOR_AUTH, Stack, fmf_info

from dprec.client.policy import DevicePolicy
from dprec.errors import DprecError
from dprec.protocol.messages import GradientReports, ItemMatrix64
from dprec.systems.deployable import ProtocolInfo
from dprec.systems.fmf.cells import assigned_cells, client_tokens, round_seed

KEY = bytes(range(32))


def _cells(stack: Stack, client_id: int, key: bytes = KEY) -> tuple[np.ndarray, np.ndarray]:
    r = stack.server.get("/v1/artefacts/item-matrix-f64")
    assert r.status_code == 200, r.text
    V = ItemMatrix64.from_bytes(r.content).matrix
    info = stack.info
    items, factors = assigned_cells(round_seed(V), client_tokens(key, np.array([client_id])),
                                    info.k, info.n_items, info.n_factors)
    return items[0], factors[0]


def _upload(client_id: int, items: np.ndarray, factors: np.ndarray) -> bytes:
    return GradientReports(client_id, items, factors,
                           np.ones(len(items), np.uint8)).to_bytes()


def test_the_proxy_admits_only_the_cells_assigned_to_the_sender(tmp_path):
    info = fmf_info(cells="assigned", mechanism="binary")
    with Stack(tmp_path, info, threshold=1, batch_senders=10) as stack:
        stack.start()
        r = stack.proxy.post("/v1/secret", headers=OPERATOR_AUTH, json={"cells_key": KEY.hex()})
        assert r.status_code == 200, r.text
        assert stack.proxy.get("/v1/round").json()["published"] == {"cells": "assigned"}
        items, factors = _cells(stack, 3)
        assert stack.submit(0, 3, _upload(3, items, factors)).status_code == 202
        # client 4 sending client 3's cells, and a client that picks its cells: refused
        r = stack.submit(0, 4, _upload(4, items, factors))
        assert r.status_code == 422 and "assigned" in r.text
        mine, theirs = _cells(stack, 5)
        target = np.zeros_like(mine), np.zeros_like(theirs)  # every report on item 0
        assert not (np.array_equal(target[0], mine) and np.array_equal(target[1], theirs))
        assert stack.submit(0, 5, _upload(5, *target)).status_code == 422
        assert stack.submit(0, 5, _upload(5, mine, theirs)).status_code == 202
        # the key is fixed once held: the same key again is fine, another one refused
        assert stack.proxy.post("/v1/secret", headers=OPERATOR_AUTH,
                                json={"cells_key": KEY.hex()}).status_code == 200
        r = stack.proxy.post("/v1/secret", headers=OPERATOR_AUTH, json={"cells_key": "ab" * 32})
        assert r.status_code == 409 and "another cells key" in r.text
        assert stack.proxy.post("/v1/secret", json={"cells_key": KEY.hex()}).status_code == 401


def test_a_proxy_of_chosen_cells_takes_no_operator_secret(tmp_path):
    with Stack(tmp_path, fmf_info(mechanism="binary"), threshold=1) as stack:
        stack.start()
        r = stack.proxy.post("/v1/secret", headers=OPERATOR_AUTH, json={"cells_key": KEY.hex()})
        assert r.status_code == 409 and "no operator secret" in r.text


def test_a_device_refuses_a_cell_rule_it_does_not_know():
    DevicePolicy().read(fmf_info(cells="assigned"))  # tests/client/test_device_assigned_cells
    doc = fmf_info(cells="chosen").to_json()
    doc["config"]["cells"] = "mine"
    with pytest.raises(DprecError, match="config.cells must be 'chosen' or 'assigned'"):
        ProtocolInfo.from_json(doc)


