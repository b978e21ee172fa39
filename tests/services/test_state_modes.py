"""The services' state is their owner's alone (issue 31 §4: the server's private key sat in
a mode-0644 SQLite file, the proxy's database too): state folders 0700, the database and
SQLite's -wal and -shm files 0600, whatever the umask, and older state tightened."""

from __future__ import annotations

import os
import sqlite3
import stat

import pytest
from svc import AUTH, Stack, fmf_info

from dprec.services.store import ProxyStore, ServerStore


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def open_umask():
    old = os.umask(0o022)  # what left the files 0644
    try:
        yield
    finally:
        os.umask(old)


def _db_files(folder):
    return sorted(p.name for p in folder.iterdir() if ".sqlite3" in p.name)


def test_the_services_state_is_private(tmp_path, open_umask):
    with Stack(tmp_path, fmf_info(), threshold=1, batch_senders=1) as stack:
        stack.start()
        assert stack.close(0).status_code == 200  # writes on both sides
        for folder, db in ((tmp_path / "server", "server.sqlite3"),
                           (tmp_path / "proxy", "proxy.sqlite3")):
            assert _mode(folder) == 0o700
            assert {db, f"{db}-wal", f"{db}-shm"} <= set(_db_files(folder))
            for name in _db_files(folder):
                assert _mode(folder / name) == 0o600, name
        assert stack.server.get("/v1/round", headers=AUTH).status_code == 200


def test_state_written_before_is_tightened_on_open(tmp_path, open_umask):
    folder = tmp_path / "state"
    folder.mkdir(mode=0o755)
    older = sqlite3.connect(folder / "server.sqlite3")  # state of an older dprec, 0644
    older.execute("PRAGMA journal_mode=WAL")
    older.execute("CREATE TABLE t(x)")
    assert len(_db_files(folder)) == 3
    assert {_mode(folder / n) for n in _db_files(folder)} == {0o644}
    store = ServerStore(folder / "server.sqlite3", "fingerprint")
    assert _mode(folder) == 0o700
    assert [_mode(folder / n) for n in _db_files(folder)] == [0o600] * 3
    store.db.close()
    older.close()
    proxy = ProxyStore(tmp_path / "new" / "deeper" / "proxy.sqlite3")
    proxy.set_meta("round", 0)
    assert _mode(tmp_path / "new" / "deeper") == 0o700
    assert [_mode(tmp_path / "new" / "deeper" / n)
            for n in _db_files(tmp_path / "new" / "deeper")] == [0o600] * 3
