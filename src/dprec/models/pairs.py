"""The (users, items) query of a rating predictor's ``predict``, validated once."""

from __future__ import annotations

import numpy as np

from dprec.errors import DprecError

__all__ = ["check_pairs"]


def check_pairs(users: np.ndarray, items: np.ndarray, where: str = ""
                ) -> tuple[np.ndarray, np.ndarray]:
    """(users, items) as int64 arrays; DprecError (prefixed by ``where``) unless both are
    1-d integer arrays of equal length. Out-of-range indices are the caller's to handle."""
    users = np.asarray(users)
    items = np.asarray(items)
    if users.ndim != 1 or items.shape != users.shape:
        raise DprecError(f"{where}users and items must be 1-d arrays of equal length, "
                         f"got shapes {users.shape} and {items.shape}")
    for label, a in (("users", users), ("items", items)):
        if a.size and not np.issubdtype(a.dtype, np.integer):
            raise DprecError(f"{where}{label} must hold integer indices, got dtype {a.dtype}")
    return users.astype(np.int64, copy=False), items.astype(np.int64, copy=False)
