"""Every exchange of the device SDK has a total deadline (issue 31 §4: a hostile service
dripping one byte every 20 s kept ``DeviceClient.report()`` blocked for over 300 s: each
read returned a byte within httpx's per-read timeout). The liar here drips a whole, valid
reply one byte every 50 ms (~10 s in all): with a 1 s deadline the SDK gives up instead of
taking it."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "services"))
from svc import fmf_info  # noqa: E402

from dprec.client import DeviceClient  # noqa: E402
from dprec.client.http import ProxyAPI, ServerAPI, Unreachable  # noqa: E402

ROUND = {"started": True, "finished": False, "round": 0, "padding": "x" * 60}


def test_a_dripping_reply_ends_at_the_exchange_deadline(liar):
    liar.serve({"GET /v1/round": {"json": ROUND, "drip": 0.05}})
    api = ServerAPI(liar.url, timeout=5.0, deadline=1.0)
    with pytest.raises(Unreachable, match="deadline of 1 s"):
        api.round()
    api.close()
    liar.serve({"GET /v1/round": {"json": ROUND}})  # the same reply at once: read
    fresh = ServerAPI(liar.url, timeout=5.0, deadline=1.0)
    assert fresh.round() == ROUND
    fresh.close()


def test_a_device_report_does_not_wait_on_a_dripping_service(liar, tmp_path):
    liar.serve({"GET /v1/protocol": {"json": fmf_info(n_items=20).to_json(), "drip": 0.05},
                "GET /v1/round": {"json": ROUND, "drip": 0.05}})
    device = DeviceClient(42, "token", ServerAPI(liar.url, timeout=5.0, deadline=1.0),
                          ProxyAPI(liar.url, timeout=5.0, deadline=1.0), tmp_path / "d", 10.0)
    h = np.zeros((1, 20))
    h[0, 3] = 1
    with pytest.raises(Unreachable, match="deadline"):
        device.report(h)
    assert device.ledger.spent == 0
