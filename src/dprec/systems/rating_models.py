"""Non-private rating predictors: Funk-SVD (docs/architecture.md §3) and item-kNN.

- ``nondp-svd``: :class:`~dprec.models.funk_svd.FunkSVD` on the true ratings, the NonDP-SVD
  reference of Laplace-SVD / Laplace-RR-SVD (docs/architecture.md §3).
- ``pcc-knn`` / ``cos-knn``: :class:`~dprec.models.knn_rating.ItemKNN` with Pearson or
  cosine item similarities (Surprise's KNNWithMeans, item-based); the similarity is fixed
  by the system name.
"""

from __future__ import annotations

from dprec.models.funk_svd import FunkSVD, FunkSVDConfig
from dprec.models.knn_rating import ItemKNN, KNNRatingConfig
from dprec.systems.base import RatingPredictor
from dprec.systems.rating_baselines import ModelPredictor
from dprec.systems.spec import SystemSpec

__all__ = ["FunkSVDPredictor", "ItemKNNPredictor"]


class FunkSVDPredictor(ModelPredictor):
    """r_hat_ui = mu + b_u + b_i + U_u . I_i fitted by SGD on the training ratings.

    ``on_iteration(e, model)`` is called after every epoch e (0-based); predictions work
    inside it.
    """

    name = "nondp-svd"
    model_type = FunkSVD


class ItemKNNPredictor(ModelPredictor):
    """Item-kNN with mean-centred weighted averages of the user's k most similar items."""

    name = "pcc-knn"
    model_type = ItemKNN


def _svd(name: str, cfg: FunkSVDConfig) -> RatingPredictor:
    return FunkSVDPredictor(name, cfg)


def _knn(name: str, cfg: KNNRatingConfig) -> RatingPredictor:
    return ItemKNNPredictor(name, cfg)


_KNN_GRID: dict[str, tuple[object, ...]] = {"k": (20, 40, 80)}

SPECS: list[SystemSpec] = [
    SystemSpec("nondp-svd", FunkSVDConfig, _svd, "rating", False,
               "Funk-SVD by SGD on the true ratings, mu + b_u + b_i + U.I (non-private)",
               {}, {"factors": (20, 50, 100), "lr": (0.005, 0.01),
                    "reg": (0.02, 0.05, 0.1)}, paper={"biases": False}),
    SystemSpec("pcc-knn", KNNRatingConfig, _knn, "rating", False,
               "item-kNN with means, Pearson similarity on co-rating users (non-private)",
               {"similarity": "pearson"}, _KNN_GRID),
    SystemSpec("cos-knn", KNNRatingConfig, _knn, "rating", False,
               "item-kNN with means, cosine similarity on raw ratings (non-private)",
               {"similarity": "cosine"}, _KNN_GRID),
]
"""nondp-svd, pcc-knn and cos-knn (the registry reads this list)."""
