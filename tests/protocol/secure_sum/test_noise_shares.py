"""The clients' Skellam noise shares have one home below the systems: dpals and dp-fedavg draw
them (and group their clients into runs of ids) from it, and the draws keep the bytes they
had when they lived in dpals (their generator labels are part of every published number)."""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path

import numpy as np
import pytest

from dprec.protocol.secure_sum import noise_shares
from dprec.protocol.secure_sum.noise_shares import LABEL, ShareNoise, consecutive_runs
from dprec.systems.dp_fedavg import client as fedavg_client
from dprec.systems.dpals import clients as dpals_clients

# sha256[:16] of leaves(0, 37) + range_sum(5, 30) of ShareNoise(2.5, 17, 37, seed=9,
# "item_statistics", round 1), measured on the module as it stood in dpals (noise.py).
PINNED = {"summed": "7da564ab39a4bab0", "per-client": "a1317694a2dfe1ee"}


@pytest.mark.parametrize("shares", sorted(PINNED))
def test_the_shares_are_the_bytes_they_were_in_dpals(shares):
    n = ShareNoise(2.5, 17, 37, 9, "item_statistics", 1, shares)
    digest = hashlib.sha256(n.leaves(0, 37).tobytes() + n.range_sum(5, 30).tobytes())
    assert LABEL == "dpals"
    assert digest.hexdigest()[:16] == PINNED[shares]


def test_a_client_share_is_its_leaf_under_both_draws():
    per_client = ShareNoise(1.5, 9, 12, 3, "r", 2, "per-client")
    for u in (0, 7, 11):
        np.testing.assert_array_equal(per_client.leaf(u),
                                      noise_shares.noise_share(1.5, 9, 3, "r", 2, u))


@pytest.mark.parametrize(("ids", "runs"), [
    ([], []), ([4], [(4, 5)]), ([0, 1, 2], [(0, 3)]),
    ([0, 2, 3, 7, 8, 9], [(0, 1), (2, 4), (7, 10)]),
])
def test_consecutive_runs_are_the_maximal_runs_of_ids(ids, runs):
    assert consecutive_runs(np.asarray(ids, dtype=np.int64)) == runs


def test_dpals_and_dp_fedavg_share_one_home_and_neither_reaches_the_other():
    assert dpals_clients.ShareNoise is fedavg_client.ShareNoise is ShareNoise
    assert dpals_clients.consecutive_runs is fedavg_client.consecutive_runs is consecutive_runs
    assert not hasattr(dpals_clients, "_runs") and not hasattr(fedavg_client, "_runs")
    package = Path(fedavg_client.__file__).parent
    reached = {node.module for path in package.glob("*.py")
               for node in ast.walk(ast.parse(path.read_text()))
               if isinstance(node, ast.ImportFrom) and node.module}
    assert not {m for m in reached if m.startswith("dprec.systems.dpals")}
