"""ShufflingProxy.record_forwarded: a round forwarded by a sharded driver is recorded by the
proxy itself, as its own forward would record it (issue 22 §2)."""

import numpy as np
import pytest

from dprec.errors import DprecError
from dprec.protocol.engine import ShufflingProxy


def test_record_forwarded_sets_what_forward_would():
    proxy = ShufflingProxy(3, np.random.default_rng(0), batch_senders=4)
    proxy.record_forwarded(11, [4, 7])
    assert (proxy.senders, proxy.batches, proxy.forwarded) == (11, [4, 7], True)


@pytest.mark.parametrize("senders, batches", [(5, []), (5, [2, 3]), (9, [4, 4])])
def test_record_forwarded_refuses_an_inconsistent_round(senders, batches):
    proxy = ShufflingProxy(3, np.random.default_rng(0))
    with pytest.raises(DprecError, match="a forwarded round needs batches"):
        proxy.record_forwarded(senders, batches)
    assert (proxy.senders, proxy.batches, proxy.forwarded) == (0, [], False)
