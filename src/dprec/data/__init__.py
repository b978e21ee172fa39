"""Datasets: fetch and cache, loaders, the synthetic generator, filters, a name registry."""

from dprec.data.dataset import Dataset
from dprec.data.features import FeatureBlock, SideFeatures, side_features
from dprec.data.fetch import cache_dir, fetch_and_load_ml100k, fetch_ml100k, verify_ml100k
from dprec.data.filters import binarise, cap_per_user, min_interactions
from dprec.data.loaders import (
    find_ml100k,
    load_csv,
    load_frappe,
    load_ml1m,
    load_ml10m,
    load_ml100k,
    load_movielens_csv,
)
from dprec.data.registry import KNOWN_DATASETS, load_dataset
from dprec.data.synthetic import synthetic

__all__ = [
    "KNOWN_DATASETS",
    "Dataset",
    "FeatureBlock",
    "SideFeatures",
    "binarise",
    "cache_dir",
    "cap_per_user",
    "fetch_and_load_ml100k",
    "fetch_ml100k",
    "find_ml100k",
    "load_csv",
    "load_dataset",
    "load_frappe",
    "load_ml100k",
    "load_ml10m",
    "load_ml1m",
    "load_movielens_csv",
    "min_interactions",
    "side_features",
    "synthetic",
    "verify_ml100k",
]
