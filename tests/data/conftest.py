"""Shared fixtures of the data tests."""

from __future__ import annotations

import pytest

from dprec.data.loaders import movielens


@pytest.fixture
def no_releases(monkeypatch):
    """Tiny fixtures are not the official releases: turn the release checks (rating counts,
    time spans) off; tests/data/test_bad_data.py checks them."""
    monkeypatch.setattr(movielens, "RELEASES", {})


@pytest.fixture
def as_release(monkeypatch):
    """``as_release(name, n)``: treat an ``n``-rating fixture as the release ``name`` (its
    time span kept)."""
    def set_rows(name: str, rows: int) -> None:
        rel = movielens.RELEASES[name]
        monkeypatch.setitem(movielens.RELEASES, name, movielens.Release(
            rel.title, rows, rel.first_day, rel.last_day))
    return set_rows
