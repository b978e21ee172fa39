"""FCF and FMF-LDP: federated implicit MF, with LDP gradient reports through a shuffler."""

from dprec.systems.fmf.system import FederatedMF, FMFConfig

__all__ = ["FMFConfig", "FederatedMF"]
