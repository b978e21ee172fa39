"""LDP-SVD's device half: the device reads the published config under its policy, perturbs
its own ratings exactly as the simulation's clients do, and ranks with the server's model.

- :func:`read_terms`: the public scale, the mechanism (ldp-svd / laplace-svd: ``mechanism``
  and ``epsilon``; laplace-rr-svd: ``eps1`` and ``eps2``), ``hide_items`` and its
  ``fake_rate``, the model's size. One upload perturbs at most one value per item, so its
  charge is N x eps (:class:`~dprec.client.policy.DevicePolicy` charges ``count`` x eps
  before it reads the history: never less than what is sent). Laplace-RR's event is
  non-private (eps = inf), so a device policy refuses it whatever it names.
- :func:`client_upload`: :func:`~dprec.systems.ldp_svd.client.upload` on a population of
  one (the simulation's client step, same law, same draws for the same generator), under
  the device's own id; an upload size that depends on the history (the items it reports).
- :func:`fold_in_scores`: the device's scores from the broadcast model: its own user
  factor and bias solved on the device from its true ratings (the Funk SVD objective with
  the item side fixed, a ridge regression: Koren et al. 2009, "Matrix factorization
  techniques", fold-in), so no rating leaves the device to rank.

Seed 001 Sec. IV-A; docs/architecture.md §3.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.protocol.deployment import DeviceReader
from dprec.protocol.messages import MessageError
from dprec.systems.ldp_svd.client import RatingMechanism, upload
from dprec.systems.ldp_svd.config import LaplaceRRSVDConfig, SVDConfig
from dprec.systems.ldp_svd.messages import RatingModel, RatingUpload, Scale

__all__ = ["client_upload", "decode_model", "fold_in_scores", "read_terms"]

_LOCAL = ("laplace", "duchi", "piecewise")


def _scale(config: SVDConfig) -> Scale:
    low, high = config.rating_min, config.rating_max
    for name, v in (("rating_min", low), ("rating_max", high)):
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise DprecError(f"the protocol's config.{name} must be a finite number, got {v!r}")
    return Scale(float(low), float(high))  # type: ignore[arg-type]


def read_terms(read: DeviceReader, info: Any) -> dict[str, Any]:
    """The device's terms of an LDP rating protocol (fields of
    :class:`~dprec.client.policy.ProtocolTerms`; the system's own values in ``settings``)."""
    c, n = info.config, info.n_items
    scale = _scale(c)
    if isinstance(c, LaplaceRRSVDConfig):
        mech, eps = "laplace-rr", read.real("eps1", positive=True)
        own: dict[str, Any] = {"eps1": eps, "eps2": read.real("eps2", positive=True)}
        fake_rate = 0.0
    else:
        mech, eps = read.choice("mechanism", _LOCAL), read.real("epsilon", positive=True)
        own = {"mechanism": mech, "epsilon": eps}
        hide = c.hide_items
        if not isinstance(hide, bool):
            raise DprecError(f"the protocol's config.hide_items must be true or false, got "
                             f"{hide!r}")
        fake_rate = read.real("fake_rate", positive=True) if hide else 0.0
        if fake_rate > 1:
            raise DprecError(f"the protocol's config.fake_rate must be in (0, 1], got "
                             f"{fake_rate!r}")
    f = read.integer("factors", "max_factors")
    m = read.integer("n_users", None)
    return {"rounds": 1, "mechanism": mech, "epsilon": eps, "count": n,
            "message_bytes": RatingUpload.serialized_size(n), "artefact": "model",
            "artefact_bytes": RatingModel.serialized_size(m, n, f),
            "artefact_what": f"a Funk SVD of {m} users and {n} items, {f} factors",
            "factors": f, "regularization": read.real("reg", positive=False),
            "settings": {**own, "rating_min": scale.low, "rating_max": scale.high,
                         "fake_rate": fake_rate, "n_users": m,
                         "biases": c.biases is True}}


def client_upload(terms: Any, mechanism: RatingMechanism, history: sp.csr_matrix,
                  rng: np.random.Generator, client_id: int) -> bytes:
    """The device's one upload: its ratings (the 1 x N ``history``, on the public scale)
    perturbed by the simulation's client step on a population of one."""
    s = terms.settings
    reports, _ = upload(sp.csr_matrix(history), int(client_id),
                        Scale(s["rating_min"], s["rating_max"]), mechanism,
                        float(s["fake_rate"]), rng)
    if len(reports) == 0:
        raise DprecError("nothing to report: the history holds no rating (and hide_items "
                         "drew no fake report)")
    return RatingUpload(int(client_id), reports.items, reports.values).to_bytes()


def decode_model(terms: Any, body: bytes) -> RatingModel:
    """The server's model, checked against the terms (M users, N items, F factors)."""
    model = RatingModel.from_bytes(body)
    want = (terms.settings["n_users"], terms.n_items, terms.factors)
    got = (model.user_factors.shape[0], model.item_factors.shape[0],
           model.item_factors.shape[1])
    if got != want:
        raise MessageError(f"the model must have (users, items, factors) = {want}, got {got}")
    return model


def fold_in_scores(terms: Any, history: sp.csr_matrix, model: RatingModel) -> np.ndarray:
    """Every item's predicted rating for this device: with the items' factors q_i and biases
    b_i fixed, (p, b_u) = argmin sum_{i rated, known} (r_i - mu - b_i - b_u - p.q_i)^2 +
    reg (|p|^2 + b_u^2), solved in closed form (F + 1 unknowns); an item no report reached
    scores mu + b_u (the model's fallback)."""
    h = sp.csr_matrix(history)
    biases = bool(terms.settings["biases"])
    known = model.item_known.astype(bool)
    rated = h.indices[known[h.indices]]
    r = h.data[known[h.indices]]
    Q = model.item_factors
    X = np.hstack([Q[rated], np.ones((rated.size, 1))]) if biases else Q[rated]
    y = r - (model.mu + model.item_biases[rated]) if biases else r
    A = X.T @ X + max(terms.regularization, 1e-12) * np.eye(X.shape[1])
    w = np.linalg.solve(A, X.T @ y)
    p, b_u = (w[:-1], float(w[-1])) if biases else (w, 0.0)
    out = np.full(terms.n_items, model.mu + b_u)
    dot = Q[known] @ p
    out[known] = model.mu + b_u + model.item_biases[known] + dot if biases else dot
    return out
