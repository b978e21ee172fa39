"""The loaders are a package with one module per format under a face that re-exports them."""

from __future__ import annotations

import importlib

import dprec.data.loaders as face

FORMATS = {"movielens": "load_ml100k", "frappe": "load_frappe", "csv": "load_csv"}


def test_each_format_has_its_own_module_behind_the_face():
    assert hasattr(face, "__path__"), "dprec.data.loaders is a package"
    for module, loader in FORMATS.items():
        mod = importlib.import_module(f"dprec.data.loaders.{module}")
        assert getattr(face, loader) is getattr(mod, loader)
        assert mod.__name__ == getattr(face, loader).__module__


def test_the_face_reexports_every_public_name_of_the_format_modules():
    names = set()
    for module in FORMATS:
        names |= set(importlib.import_module(f"dprec.data.loaders.{module}").__all__)
    assert names == set(face.__all__)
    assert all(hasattr(face, n) for n in face.__all__)
