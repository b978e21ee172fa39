"""Helpers of the sharded-backend tests (imported by module name, like tests/services/svc)."""

import numpy as np


def broadcast_of(model: object) -> np.ndarray:
    """What a fitted DPLCF (similarities) or FMF-LDP (V) model broadcasts."""
    b = getattr(model, "broadcast", None)
    return b.sims if b is not None and hasattr(b, "sims") else model.V  # type: ignore[attr-defined]
