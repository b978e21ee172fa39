"""The ledger is keyed on what the device sent, (pinned run, round), not on the server's
round number: a server that restarts a round gets the stored message again, bit for bit,
never new noise for free (issue 21 §1)."""

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).parents[1] / "services"))
from svc import TOKEN_KEY, Stack, fmf_info  # noqa: E402

from dprec.client import DeviceClient, ProxyAPI, RunChanged, SeededSource, ServerAPI  # noqa: E402
from dprec.protocol.messages import Message  # noqa: E402
from dprec.services.auth import client_token  # noqa: E402

INFO = fmf_info(n_items=30, k=10, epochs=2, factors=3)  # eps 2.5 per report: 25 per round
HISTORY = sp.csr_matrix(np.isin(np.arange(30), [3, 7, 11]).astype(float)[None, :])


def _device(stack, folder, seed):
    return DeviceClient(42, client_token(TOKEN_KEY, 42),
                        ServerAPI("http://server", client=stack.server),
                        ProxyAPI("http://proxy", client=stack.proxy), folder, 60.0,
                        SeededSource(seed))


def _received(stack, round):
    """The (item, factor, bit) reports the server stored for ``round``, sorted."""
    out = []
    for body in stack.server_app.state.service.store.batches(round):
        m = Message.from_bytes(body)
        out += zip(m.items.tolist(), m.factors.tolist(), m.bits.tolist(), strict=True)
    return sorted(out)


def _two_rounds(stack, device):
    got = []
    for r in range(2):
        assert device.report(HISTORY)
        assert stack.close(r).json()["server"]["updated"]
        got.append(_received(stack, r))
    return got


@pytest.fixture
def first(tmp_path):
    with Stack(tmp_path / "a", INFO, threshold=1, batch_senders=1) as s:
        s.start()
        yield s


@pytest.fixture
def redeployed(tmp_path):  # the same protocol, restarted with empty state
    with Stack(tmp_path / "b", INFO, threshold=1, batch_senders=1) as s:
        s.start(seed=1)
        yield s


def test_a_restarted_server_gets_the_stored_messages_never_new_noise(first, redeployed,
                                                                      tmp_path):
    folder = tmp_path / "device"
    sent = _two_rounds(first, _device(first, folder, seed=1))
    device = _device(redeployed, folder, seed=2)  # another generator: new noise would show
    assert device.ledger.spent == 50.0
    resent = _two_rounds(redeployed, device)
    assert resent == sent and len(sent[0]) == 10  # the same reports, bit for bit
    assert device.ledger.spent == 50.0  # = 2 messages x 25: everything the device sent
    assert len(list((folder / "sent").iterdir())) == 2


def test_a_charged_round_whose_message_is_lost_is_not_reported_again(first, redeployed,
                                                                     tmp_path):
    folder = tmp_path / "device"
    assert _device(first, folder, seed=1).report(HISTORY)
    for f in (folder / "sent").iterdir():
        f.unlink()
    device = _device(redeployed, folder, seed=2)
    assert device.report(HISTORY) is False
    assert device.ledger.spent == 25.0
    assert redeployed.proxy_app.state.service.store.senders(0) == 0


def test_another_run_is_refused_until_joined_and_then_charged(first, tmp_path):
    folder = tmp_path / "device"
    assert _device(first, folder, seed=1).report(HISTORY)
    other = fmf_info(n_items=30, k=10, epochs=2, factors=3, epsilon=2.0)  # 20 per round
    with Stack(tmp_path / "c", other, threshold=1, batch_senders=1) as s:
        s.start()
        device = _device(s, folder, seed=2)
        with pytest.raises(RunChanged, match="join_new_run"):
            device.report(HISTORY)
        assert s.proxy_app.state.service.store.senders(0) == 0 and device.ledger.spent == 25.0
        device.join_new_run()
        assert device.report(HISTORY)
        assert device.ledger.spent == 45.0  # a new run's message is charged anew
        assert s.proxy_app.state.service.store.senders(0) == 1
        s.close(0)
        assert device.report(HISTORY) is False  # 45 + 20 > 60: the budget spans the runs
        assert device.ledger.spent == 45.0
