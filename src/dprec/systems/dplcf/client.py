"""DPLCF client (on device): obfuscate once, then score with the true local history.

Never imports server code; shares only messages and mechanisms.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dprec.mechanisms.bitflip import BitFlip
from dprec.models.itemknn import score_item_neighbourhood, score_user_neighbourhood
from dprec.systems.dplcf.messages import NeighbourLists, ObfuscatedBits


def obfuscate(
    history: sp.csr_matrix, mechanism: BitFlip | None, rng: np.random.Generator
) -> ObfuscatedBits:
    """Flip every bit of each client's N-bit interaction vector (SYSTEMS.md §1, client step).

    ``mechanism=None`` uploads the true vectors (the non-private LCF-UB upper bound).
    """
    if mechanism is None:
        dense = history.toarray() > 0
    else:
        dense = mechanism.obfuscate_dense(history, rng, dtype=np.uint8)
    return ObfuscatedBits.pack(dense)


def local_scores(
    history: sp.csr_matrix, neighbours: NeighbourLists, neighbourhood: str, k: int
) -> np.ndarray:
    """score(u, i) from the TRUE history; the ranking never leaves the device.

    "item": Eq. 12, sum over the item's global top-K neighbours that u interacted with.
    "user": sum of the K largest sim(i, j) over items j in u's history.
    """
    if neighbourhood == "item":
        return score_item_neighbourhood(history, neighbours.indices, neighbours.sims)
    if neighbours.full is None:
        raise ValueError("the user-history neighbourhood needs the full similarity broadcast")
    return score_user_neighbourhood(history, neighbours.full, k)
