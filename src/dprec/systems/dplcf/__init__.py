"""DPLCF: differentially private local collaborative filtering (Gao et al., SIGIR 2020).

``client`` (device), ``server`` (untrusted aggregator) and ``system`` (the simulated
protocol, :class:`~dprec.systems.dplcf.system.LocalItemCF`). Nothing is imported here, so
that importing the client never loads the server.
"""

__all__: list[str] = []

