"""DPLCF: differentially private local collaborative filtering (Gao et al., SIGIR 2020).

``client`` (device), ``server`` (untrusted aggregator), ``messages`` (what travels between
them), ``system`` (the simulated protocol, :class:`~dprec.systems.dplcf.system.LocalItemCF`)
and ``specs`` (registry entries). Nothing is imported here, so that importing the client
never loads the server.
"""

__all__: list[str] = []

