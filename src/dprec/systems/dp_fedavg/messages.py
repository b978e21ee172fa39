"""The upload of dp-fedavg clients: an integer sum of noisy quantised updates."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["NoisySum"]


@dataclass(frozen=True)
class NoisySum:
    """The sum of ``n_clients`` clients' uploads ``v_u = [sampled] R(gamma g_u) + z_u``
    (int64, ``N F``; ``z_u`` only with secure aggregation, and with a trusted curator an
    unsampled client's part is zero): what the secure sum releases for them, which the
    in-process simulation computes directly (issue 23 §1). Whether a client was sampled is
    not in it."""

    total: np.ndarray
    n_clients: int
