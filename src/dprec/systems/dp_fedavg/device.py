"""One dp-fedavg client's update, as a device computes it from its own history and one
generator (a CSPRNG on a device): the vector it adds to the round's secure sum.

``x_u`` solved from the broadcast ``V`` (never sent), the clipped gradient
``outer(w_u, x_u)`` (``||.||_2 <= C``, :func:`~dprec.systems.dp_fedavg.client.clipped_weights`),
the Poisson coin ``Bernoulli(rate)`` (kept on the device), ``R(gamma g_u)`` if sampled else
0 (:func:`~dprec.protocol.secure_sum.client.quantise`), plus the share ``Sk(share_mu)``
(every client, sampled or not; truncated to the round's check with ``validity=prio3``).
The draws come in that order from ``rng``: the coin, the rounding, the share.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dprec.protocol.secure_sum.client import quantise
from dprec.protocol.secure_sum.device import device_share
from dprec.protocol.secure_sum.vdaf.contribution import ContributionCheck
from dprec.systems.fmf.client import user_vectors

__all__ = ["client_update", "clipped_update", "clipped_weights"]


def clipped_weights(X: np.ndarray, V: np.ndarray, history: sp.csr_matrix, alpha: float,
                    clip: float) -> np.ndarray:
    """``w_u`` (b, N) of a block of clients, scaled so that ``||w_u||_2 ||x_u||_2 <= clip``:
    the clipped gradient of client ``u`` is ``outer(w_u, x_u)``."""
    R = np.asarray(history.todense(), dtype=np.float64)
    W = (1.0 + alpha * R) * ((R > 0) - X @ V.T)
    norm = np.linalg.norm(W, axis=1) * np.linalg.norm(X, axis=1)
    scale = np.minimum(1.0, clip / np.maximum(norm, 1e-300))
    return W * scale[:, None]


def clipped_update(V: np.ndarray, history: sp.csr_matrix, *, alpha: float, reg: float,
                   clip: float, rate: float, rng: np.random.Generator,
                   gram: np.ndarray | None = None) -> tuple[np.ndarray, bool]:
    """(the client's clipped gradient ``outer(w_u, x_u)`` flattened, ``||.||_2 <= clip``,
    or zeros where its coin ``Bernoulli(rate)`` from ``rng`` did not sample it; whether it
    did) for the 1 x N ``history``."""
    sampled = bool(rng.random() < rate)
    if not sampled:
        return np.zeros(V.size), False
    hist = sp.csr_matrix(history)
    X = user_vectors(V, hist, alpha, reg, V.T @ V if gram is None else gram)
    W = clipped_weights(X, V, hist, alpha, clip)
    return np.outer(W[0], X[0]).ravel(), True


def client_update(V: np.ndarray, history: sp.csr_matrix, *, alpha: float, reg: float,
                  clip: float, gamma: float, rate: float, share_mu: float | None,
                  rng: np.random.Generator, gram: np.ndarray | None = None,
                  check: ContributionCheck | None = None) -> tuple[np.ndarray, bool]:
    """(the client's noisy integer vector of ``V.size`` coordinates, whether its coin
    sampled it) for the 1 x N ``history`` (module docstring): :func:`clipped_update`,
    quantised, plus its share drawn as a device draws it
    (:func:`~dprec.protocol.secure_sum.deploy.device_share`: truncated to ``check`` with
    ``validity=prio3``, so an honest upload proves)."""
    x, sampled = clipped_update(V, history, alpha=alpha, reg=reg, clip=clip, rate=rate,
                                rng=rng, gram=gram)
    out = quantise(x, gamma, gamma * clip, rng) if sampled else np.zeros(V.size, np.int64)
    if share_mu is not None:
        out = out + device_share(out, rng, ((V.size, share_mu),), check)
    return out, sampled
