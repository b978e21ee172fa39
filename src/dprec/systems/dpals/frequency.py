"""What the DP item counts shape in a dpals run, besides the adaptive weights: the head items
it trains on, and each item's regularisation. Everything here is post-processing of the
released counts (public once released), so it costs no privacy beyond the count round,
which any of these options switches on (:func:`uses_counts`).

- ``head_items = H`` (Chien et al., ICML 2021, §5 "training on frequent items";
  google-research ``dp_alternating_minimization/dpam.py``, ``Sanitizer(item_frac)``): the
  ``H`` items of largest DP count (ties: the smaller item id, :func:`dprec.selection.top_k_row`)
  form the head. A client selects its contributions among its head items only, so its budget
  ``k`` is not spent on items whose statistics the noise would drown; the server solves only
  the head items and publishes zero factors for the tail (their score is 0 for every user,
  as the anchor's rare items). The sensitivity is unchanged: a user still contributes to at
  most ``M`` items with ``sum_j c_j^2 <= k``.
- ``reg_exponent = e`` (frequency-scaled regularisation, ``dpam.py``'s ``_compute_weights``,
  ``col_reg_exponent``): item ``j``'s regularisation is ``reg w_j`` with
  ``w_j = (n_j + 1)^e / m``, ``n_j`` the DP count floored at 0 and
  ``m = sum_j (n_j + 1)^(1 + e) / sum_j (n_j + 1)`` (so ``sum_j (n_j + 1) w_j =
  sum_j (n_j + 1)``); ``e > 0`` regularises frequent items more, ``e = 0`` is the uniform
  ``reg``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from dprec.errors import DprecError
from dprec.selection import top_k_row

if TYPE_CHECKING:
    from dprec.systems.dpals.config import DpalsConfig

__all__ = ["head_mask", "item_regularisation", "uses_counts"]


def uses_counts(cfg: DpalsConfig) -> bool:
    """Whether a run releases DP item counts first: tail or adaptive weighting, a head
    restriction or a frequency-scaled regularisation."""
    return (cfg.weighting != "uniform" or cfg.head_items is not None
            or float(cfg.reg_exponent) != 0.0)


def head_mask(counts: np.ndarray, head_items: int | None) -> np.ndarray | None:
    """Boolean mask of the ``head_items`` items of largest count (ties: smaller id); None
    when there is no head restriction (or it covers every item)."""
    counts = np.asarray(counts, dtype=np.float64)
    if head_items is None or int(head_items) >= counts.size:
        return None
    if counts.ndim != 1 or not np.isfinite(counts).all():
        raise DprecError("the DP item counts must be a finite vector to pick the head items")
    mask = np.zeros(counts.size, dtype=bool)
    mask[top_k_row(counts, int(head_items))] = True
    return mask


def item_regularisation(reg: float, counts: np.ndarray | None, exponent: float
                        ) -> float | np.ndarray:
    """``reg`` (no exponent) or each item's ``reg w_j`` (module docstring)."""
    if exponent == 0.0 or counts is None:
        return float(reg)
    n1 = np.maximum(np.asarray(counts, dtype=np.float64), 0.0) + 1.0
    w = n1 ** float(exponent)
    return float(reg) * w * (n1.sum() / (n1 * w).sum())
