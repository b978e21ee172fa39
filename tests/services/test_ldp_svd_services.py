"""LDP-SVD deployed through its descriptor alone (issue 22 §1): ``dprec simulate --transport
http`` gives the in-process result, for ldp-svd and laplace-rr-svd (a config of the same
system); the wire messages are lossless."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dprec.models.funk_svd import FunkSVD, FunkSVDConfig
from dprec.systems.ldp_svd.messages import RatingBatch, RatingModel, RatingUpload


def test_the_wire_messages_are_lossless():
    rng = np.random.default_rng(0)
    up = RatingUpload(7, np.array([1, 4, 9]), rng.normal(size=3))
    assert RatingUpload.from_bytes(up.to_bytes()) == up
    assert up.nbytes == len(up.to_bytes())
    batch = RatingBatch(np.array([0, 0, 3]), np.array([2, 5, 1]), rng.normal(size=3) / 3)
    back = RatingBatch.from_bytes(batch.to_bytes())
    assert back == batch and back.n_clients == 2
    cfg = FunkSVDConfig(factors=2, epochs=2)
    R = sp.random(6, 5, density=0.5, format="csr", rng=rng)
    R.data = 1 + 4 * R.data
    model = FunkSVD(cfg).fit(R, np.random.default_rng(1))
    users, items = model.known
    msg = RatingModel(model.global_mean, model.user_factors, model.item_factors,
                      model.user_biases, model.item_biases, users, items)
    again = RatingModel.from_bytes(msg.to_bytes())
    copy = FunkSVD.from_parameters(cfg, again.mu, again.user_factors, again.item_factors,
                                   again.user_biases, again.item_biases, again.user_known,
                                   again.item_known)
    u, i = np.repeat(np.arange(7), 6), np.tile(np.arange(6), 7)  # unknown ids included
    np.testing.assert_array_equal(copy.predict(u, i), model.predict(u, i))
