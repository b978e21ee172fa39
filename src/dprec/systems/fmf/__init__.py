"""FCF and FMF-LDP: federated implicit MF, with LDP gradient reports through a shuffler.

``client`` (device), ``server`` (untrusted aggregator) and ``system`` (the simulated
protocol, :class:`~dprec.systems.fmf.system.FederatedMF`). Nothing is imported here, so that
importing the client never loads the server.
"""

__all__: list[str] = []

