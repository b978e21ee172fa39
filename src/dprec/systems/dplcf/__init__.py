"""DPLCF: differentially private local collaborative filtering (Gao et al., SIGIR 2020)."""

from dprec.systems.dplcf.system import LocalItemCF, LocalItemCFConfig

__all__ = ["LocalItemCF", "LocalItemCFConfig"]
