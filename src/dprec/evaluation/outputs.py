"""The one check every evaluator applies to what a model returns."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from dprec.errors import DprecError

__all__ = ["checked_output"]


def checked_output(values: ArrayLike, shape: tuple[int, ...], source: str, kind: str
                   ) -> np.ndarray:
    """``values`` as a float64 copy (the evaluator may mask it), refused unless it has
    ``shape`` and every value is finite: no metric is computed from NaN or inf.

    ``source`` names the call in the error ("bpr.score"), ``kind`` its values ("scores").
    """
    out = np.array(values, dtype=np.float64, copy=True)
    if out.shape != tuple(shape):
        raise DprecError(f"{source} returned shape {out.shape}, expected {tuple(shape)}")
    bad = int(np.count_nonzero(~np.isfinite(out)))
    if bad:
        raise DprecError(f"{source} returned {bad} NaN or infinite {kind} out of {out.size}; "
                         "every value must be finite")
    return out
