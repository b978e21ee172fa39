"""Recommendation models: implicit MF by ALS (Hu et al. 2008) and BPR-MF (Rendle et al. 2009)."""

from dprec.models.als import ALSConfig, ImplicitALS, implicit_mf_loss, solve_user_factors
from dprec.models.bpr import BPRMF, BPRConfig

__all__ = [
    "ALSConfig",
    "BPRConfig",
    "BPRMF",
    "ImplicitALS",
    "implicit_mf_loss",
    "solve_user_factors",
]
