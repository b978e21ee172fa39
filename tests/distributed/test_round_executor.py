"""One round loop (issue 22 §2): the sharded backends execute the engine's rounds
(:func:`dprec.protocol.engine.run_rounds`) and own no loop, no event log and no hook."""

import ast
from functools import partial
from pathlib import Path

import numpy as np
from sharded import fmf_round_parts

import dprec.distributed
from dprec.distributed import LocalBackend
from dprec.distributed.synthetic import SyntheticPopulation
from dprec.mechanisms.numeric import BinaryMechanism
from dprec.privacy.events import EventLog
from dprec.protocol import engine
from dprec.protocol.engine import RoundExecutor, ShufflingProxy, run_protocol
from dprec.systems.fmf.client import FederatedClients
from dprec.systems.fmf.server import FactorServer

LOOP_WORK = {"record", "start", "RoundRecord", "ProtocolRun"}


def _loop_work(source: str) -> list[str]:
    """Calls that belong to the round loop: recording events, starting roles, records."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name in LOOP_WORK:
                found.append(f"{name} (line {node.lineno})")
    return found


def test_the_guard_sees_loop_work():
    assert _loop_work("log_.record(r, e, u)\nserver.start(rng)\nRoundRecord(r, 1, 2)") == [
        "record (line 1)", "start (line 2)", "RoundRecord (line 3)"]


def test_no_module_of_dprec_distributed_does_the_loops_work():
    root = Path(dprec.distributed.__file__).parent
    found = {p.name: w for p in sorted(root.glob("*.py")) if (w := _loop_work(p.read_text()))}
    assert found == {}


def test_a_sharded_run_goes_through_the_engines_loop(small_train, monkeypatch):
    calls = []
    loop = engine.run_rounds

    def spy(executor, *args, **kwargs):
        calls.append(type(executor).__name__)
        return loop(executor, *args, **kwargs)

    monkeypatch.setattr(engine, "run_rounds", spy)
    clients, server = fmf_round_parts(small_train)
    backend = LocalBackend(2, block_size=512)
    assert isinstance(backend.executor(server, clients, ShufflingProxy(100)), RoundExecutor)
    run_protocol(server, clients, 2, np.random.default_rng(0), EventLog(small_train.shape[0]),
                 proxy=ShufflingProxy(100), transport=backend)
    assert calls == ["ShardedRounds"]


def test_a_population_run_calls_the_hook_once_per_updated_round():
    mech = BinaryMechanism(2.5)
    pop = SyntheticPopulation(1200, 40, 8.0, 7, partial(
        FederatedClients, ledger=None, batch_size=512, factors=3, alpha=1.0, reg=1e-6, k=3,
        clip=1.0, exact=False, mechanism=mech), 512, k=3)
    seen = []
    log = EventLog(1200)
    run = LocalBackend(2, block_size=512).run_population(
        FactorServer(40, 3, 1e-3, 1e-6, 2, 1.0, 0.1, mech), pop, 3, np.random.default_rng(0),
        log, ShufflingProxy(100), on_iteration=lambda r, b: seen.append((r, b)))
    assert [r for r, _ in seen] == [0, 1, 2]
    assert seen[-1][1] is run.broadcast
    assert [(r.round, r.updated, r.senders) for r in run.rounds] == [(0, True, 1200),
                                                                      (1, True, 1200),
                                                                      (2, True, 1200)]
    assert len(log) > 0
    refused = LocalBackend(2, block_size=512).run_population(
        FactorServer(40, 3, 1e-3, 1e-6, 2, 1.0, 0.1, mech), pop, 2, np.random.default_rng(0),
        EventLog(1200), ShufflingProxy(1201), on_iteration=lambda r, b: seen.append((r, b)))
    assert refused.rounds_without_update == 2 and len(seen) == 3
