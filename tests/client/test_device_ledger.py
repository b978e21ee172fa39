"""The device's privacy ledger: on disk, atomic, never over budget, survives restarts."""

import json
import math
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dprec.client.ledger import BudgetExceededError, DiskLedger
from dprec.errors import DprecError

TOL = 1 + 1e-9  # the simulation ledger's tolerance (10 x 0.1 fits 1.0)


@settings(max_examples=150, deadline=None)
@given(budget=st.floats(0.01, 100.0),
       ops=st.lists(st.tuples(st.sampled_from(["charge", "restart", "crash"]),
                              st.integers(0, 12),
                              st.floats(0.0, 30.0) | st.sampled_from([0.1, 1.0, math.inf])),
                    max_size=30))
def test_never_over_budget_and_restarts_keep_everything(tmp_path_factory, budget, ops):
    path = tmp_path_factory.mktemp("ledger") / "ledger.json"
    ledger = DiskLedger(path, budget)
    accepted: dict[str, float] = {}
    for op, key_n, eps in ops:
        key = f"round-{key_n}"
        if op == "restart":
            ledger = DiskLedger(path, budget)
        elif op == "crash":  # the write dies before the rename: nothing changes
            real = os.replace

            def dying(*a, **k):
                raise OSError("killed during the write")

            fits = ledger.spent + eps <= budget * TOL
            os.replace = dying
            try:
                if key in accepted:  # charged once per key: nothing is written
                    assert ledger.charge(key, eps) is False
                elif fits:  # the charge is written, and the write dies
                    with pytest.raises(OSError, match="killed during the write"):
                        ledger.charge(key, eps)
                else:  # refused before anything is written
                    with pytest.raises(BudgetExceededError):
                        ledger.charge(key, eps)
            finally:
                os.replace = real
            assert ledger.spent == math.fsum(accepted.values())  # nothing changed in memory
            ledger = DiskLedger(path, budget)
        else:
            before = ledger.spent
            fits = before + eps <= budget * TOL
            if key in accepted:
                assert ledger.charge(key, eps) is False  # charged once per key
            elif fits:
                assert ledger.charge(key, eps) is True
                accepted[key] = eps
            else:
                with pytest.raises(BudgetExceededError):
                    ledger.charge(key, eps)
        assert ledger.spent == math.fsum(accepted.values())
        assert ledger.spent <= budget * TOL
        on_disk = json.loads(path.read_text())
        assert on_disk["charges"] == accepted and on_disk["budget"] == budget


def test_budget_is_fixed_and_a_torn_file_is_refused(tmp_path):
    path = tmp_path / "l.json"
    DiskLedger(path, 1.0).charge("a", 0.5)
    with pytest.raises(DprecError, match="budget 1.0, not 2.0"):
        DiskLedger(path, 2.0)
    path.write_text('{"format": 1, "budget": 1.0, "charges": {"a": ')
    with pytest.raises(DprecError, match="unreadable"):
        DiskLedger(path, 1.0)
    with pytest.raises(DprecError):
        DiskLedger(tmp_path / "m.json", 1.0).charge("x", -1.0)
    assert not list(tmp_path.glob(".*.tmp"))


def _charge_after_all_loaded(path: str, budget: float, worker: int, keys: int, eps: float,
                             barrier, out) -> None:
    """One process: load the ledger, wait until every process has loaded it, then charge
    ``keys`` keys of its own; put the keys it was allowed to charge (what it would send)."""
    ledger = DiskLedger(path, budget)
    barrier.wait()
    accepted = []
    for i in range(keys):
        try:
            if ledger.charge(f"worker-{worker}/round-{i}", eps):
                accepted.append(f"worker-{worker}/round-{i}")
        except BudgetExceededError:
            pass
    out.put(accepted)


@pytest.mark.slow  # real device processes
def test_two_processes_on_one_folder_never_pass_the_budget(tmp_path):
    """Issue 31 reproduction: two devices on one folder each loaded the ledger once and
    rewrote it from memory, so both spent the whole budget (75 eps sent on 60). With the
    lock and the re-read, real processes together charge at most the budget, and every
    charge they were allowed is on disk."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    path = tmp_path / "dev" / "ledger.json"
    budget, eps, workers, keys = 60.0, 15.0, 3, 4
    DiskLedger(path, budget)
    barrier, out = ctx.Barrier(workers), ctx.Queue()
    procs = [ctx.Process(target=_charge_after_all_loaded,
                         args=(str(path), budget, w, keys, eps, barrier, out))
             for w in range(workers)]
    for p in procs:
        p.start()
    accepted = [k for _ in procs for k in out.get(timeout=120)]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert len(accepted) * eps == budget  # exactly the budget: no more, and none lost
    on_disk = json.loads(path.read_text())["charges"]
    assert sorted(on_disk) == sorted(accepted)
    assert DiskLedger(path, budget).spent == budget


def test_the_ledger_folder_and_files_are_private(tmp_path):
    """Issue 31 §4: the device ledger was mode 0644; its folder is 0700, its files 0600."""
    import stat

    folder = tmp_path / "device"
    ledger = DiskLedger(folder / "ledger.json", 1.0)
    ledger.charge("a", 0.5)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for f in folder.iterdir():
        assert stat.S_IMODE(f.stat().st_mode) == 0o600, f.name


def test_a_note_travels_with_its_charge_and_a_stray_note_is_refused(tmp_path):
    """A charge's note (what its guarantee rests on: a trusted aggregator) is kept on disk
    with it; a ledger whose note names no charge is refused, not guessed at."""
    path = tmp_path / "ledger.json"
    ledger = DiskLedger(path, 5.0)
    assert ledger.charge("run/round-0", 1.5, "rests on a trusted aggregator")
    assert ledger.charge("run/round-1", 0.5)
    again = DiskLedger(path, 5.0)
    assert again.notes == {"run/round-0": "rests on a trusted aggregator"}
    assert again.count_under("run/") == 2 and again.spent == 2.0
    doc = json.loads(path.read_text())
    doc["notes"]["run/round-9"] = "a note without a charge"
    path.write_text(json.dumps(doc))
    with pytest.raises(DprecError, match="unreadable"):
        DiskLedger(path, 5.0)
