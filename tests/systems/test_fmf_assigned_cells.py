"""FMF-LDP ``cells=assigned`` (issue 26 §1): same report law and privacy, attackers pinned."""

import hashlib
import json

import numpy as np
import pytest
from scipy.stats import chisquare

from dprec.data.synthetic import synthetic
from dprec.errors import DprecError
from dprec.privacy.events import strict_json
from dprec.protocol.batches import ReportBatch
from dprec.protocol.poisoning import PoisonHook, Poisoning, poison
from dprec.random import derive_generator
from dprec.systems.fmf.attacks import ReportAttack
from dprec.systems.fmf.cells import (
    CellCheckingProxy,
    assigned_cells,
    client_tokens,
    round_seed,
)
from dprec.systems.fmf.system import FMFConfig
from dprec.systems.registry import make_system

PARAMS = {"epochs": 3, "k": 20, "lr": 0.01, "shuffle_threshold": 50}


@pytest.fixture(scope="module")
def train():
    return synthetic(200, 60, 5000, rng=0).binary()


def _fit(train, cells: str, hook=None, poisoning: Poisoning | None = None):
    model = make_system("fmf-ldp", {**PARAMS, "cells": cells})
    if poisoning is not None:
        hook = poison(model, poisoning, derive_generator(3, "poison"))
    elif hook is not None:
        model.clients_hook = hook
    model.fit(train, derive_generator(7, "system", "fmf-ldp"))
    return model, hook


def test_the_rule_is_the_stated_one():
    """SHAKE-256(seed || token) as uint64 words, rejection above L, cell = w mod N F."""
    V = np.arange(12.0).reshape(4, 3)
    seed = round_seed(V)
    assert seed == hashlib.sha256(b"dprec/fmf-ldp/assigned-cells/v1"
                                  + np.array([4, 3], "<i8").tobytes()
                                  + V.astype("<f8").tobytes()).digest()
    tokens = client_tokens(b"k" * 32, np.array([0, 5, 9]))
    items, factors = assigned_cells(seed, tokens, 7, 4, 3)
    assert items.dtype == np.int32 and factors.dtype == np.uint8 and items.shape == (3, 7)
    for row, t in enumerate(tokens):
        w = np.frombuffer(hashlib.shake_256(seed + t).digest(8 * 14), "<u8")
        w = w[w < np.uint64((2**64 // 12) * 12)][:7] % np.uint64(12)
        np.testing.assert_array_equal(items[row], w // 3)
        np.testing.assert_array_equal(factors[row], w % 3)
    other, _ = assigned_cells(round_seed(V + 1), tokens, 7, 4, 3)
    assert not np.array_equal(other, items)  # a new broadcast, new cells


def test_assigned_cells_are_uniform_and_independent():
    """Chi-square: items, factors and the joint cell uniform; item and factor independent
    (the law of sample_slots)."""
    n_items, n_factors = 37, 5
    tokens = client_tokens(b"r" * 32, np.arange(4000))
    items, factors = assigned_cells(round_seed(np.zeros((3, 2))), tokens, 25, n_items,
                                    n_factors)
    joint = np.bincount(items.ravel().astype(np.int64) * n_factors + factors.ravel(),
                        minlength=n_items * n_factors)
    assert chisquare(joint).pvalue > 1e-3
    assert chisquare(np.bincount(items.ravel(), minlength=n_items)).pvalue > 1e-3
    assert chisquare(np.bincount(factors.ravel(), minlength=n_factors)).pvalue > 1e-3
    # per client: the k cells of one token are i.i.d. too (repeats as often as with replacement)
    repeats = np.mean([len(np.unique(r)) < 25 for r in items * n_factors + factors])
    expect = 1 - np.prod(1 - np.arange(25) / (n_items * n_factors))
    assert abs(repeats - expect) < 0.03


def test_privacy_report_is_bit_for_bit_the_chosen_one(train):
    chosen, _ = _fit(train, "chosen")
    assigned, _ = _fit(train, "assigned")
    assert not np.array_equal(chosen.V, assigned.V)  # the cells did change
    assert assigned.diagnostics()["messages_refused_by_cell_check"] == 0
    dump = [json.dumps(strict_json(m.privacy_report().to_json()), sort_keys=True)
            for m in (chosen, assigned)]
    assert dump[0] == dump[1]
    assert assigned.events.to_json() == chosen.events.to_json()


def test_the_proxy_ignores_a_sender_with_other_cells():
    V = np.random.default_rng(0).normal(size=(30, 4))
    key = b"p" * 32
    ids = np.arange(120)
    items, factors = assigned_cells(round_seed(V), client_tokens(key, ids), 5, 30, 4)
    bad_items = items.copy()
    bad_items[7, 0] = (bad_items[7, 0] + 1) % 30
    bits = np.ones_like(items, dtype=np.uint8)
    proxy = CellCheckingProxy(100, key, lambda: V, 5, 30, 4)
    proxy.start(np.random.default_rng(1))
    out = list(proxy.forward([ReportBatch(ids, bad_items, factors, bits=bits)]))
    assert proxy.refused == 1 and proxy.senders == 119
    assert sum(len(b.items) for b in out) == 119 * 5


def test_a_promote_attack_that_picks_its_cells_is_refused(train):
    """The chosen-cells attack (all reports on the targets) never reaches the server."""
    hook = PoisonHook(Poisoning(0.1, "promote"), derive_generator(3, "poison"), ReportAttack())
    model, hook = _fit(train, "assigned", hook=hook)
    assert model.diagnostics()["messages_refused_by_cell_check"] == 20 * PARAMS["epochs"]


def test_the_attack_keeps_its_assigned_cells(train):
    """Through poison(), the promote attack keeps the assigned cells: nothing is refused,
    and only the values of its own cells are biased."""
    model, hook = _fit(train, "assigned", poisoning=Poisoning(0.1, "promote"))
    assert hook.poisoning.fixed_cells and hook.clients.replaced == 20 * PARAMS["epochs"]
    assert model.diagnostics()["messages_refused_by_cell_check"] == 0


def test_cells_must_be_a_known_rule():
    with pytest.raises(DprecError, match="cells must be chosen or assigned"):
        FMFConfig(cells="mine")


def test_assigned_cells_refuse_a_transport_that_does_not_check_them():
    """The sharded backends do not check the assignment: refuse,
    rather than run with an unchecked rule."""
    import scipy.sparse as sp

    from dprec.errors import DprecError
    from dprec.protocol.engine import InProcess
    from dprec.systems.fmf.system import FederatedMF, FMFConfig
    model = FederatedMF("fmf-ldp", FMFConfig(cells="assigned", epochs=1))
    model.transport = InProcess()
    train = sp.random(20, 10, density=0.3, format="csr", random_state=0)
    train.data[:] = 1.0
    with pytest.raises(DprecError, match="sharded backends do not check"):
        model.fit(train, np.random.default_rng(0))
