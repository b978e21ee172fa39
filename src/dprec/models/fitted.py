"""Read access to a model's learned arrays, with one not-fitted rule (issue 22, §5).

A model keeps each learned array in a private attribute that is ``None`` until ``fit``; its
public read-only property is :func:`fitted_array`, which raises
:class:`~dprec.errors.NotFittedError` ("<Model> is not fitted; call fit() first") before then.
A learned scalar reads through :func:`fitted_value`, guarded by one such array, and
``is_fitted`` is :func:`fitted_flag` of that array.
"""

from __future__ import annotations

import numpy as np

from dprec.errors import NotFittedError

__all__ = ["fitted_array", "fitted_flag", "fitted_value", "require_fitted"]


def require_fitted(x: np.ndarray | None, model: str) -> np.ndarray:
    """``x`` itself, or NotFittedError naming ``model`` when ``x`` is None (not fitted yet)."""
    if x is None:
        raise NotFittedError(f"{model} is not fitted; call fit() first")
    return x


def fitted_array(attribute: str, doc: str) -> property:
    """A read-only property returning ``self.<attribute>``, NotFittedError while it is None."""

    def get(self: object) -> np.ndarray:
        return require_fitted(getattr(self, attribute), type(self).__name__)

    return property(get, doc=doc)


def fitted_value(attribute: str, guard: str, doc: str) -> property:
    """A read-only property returning ``self.<attribute>`` (a learned scalar), NotFittedError
    while the learned array ``self.<guard>`` is None."""

    def get(self: object) -> object:
        require_fitted(getattr(self, guard), type(self).__name__)
        return getattr(self, attribute)

    return property(get, doc=doc)


def fitted_flag(guard: str) -> property:
    """``is_fitted``: a read-only property, True once the learned array ``self.<guard>`` is
    set by ``fit``."""

    def get(self: object) -> bool:
        return getattr(self, guard) is not None

    return property(get, doc="Whether fit has run (the model predicts).")
