"""FCF and FMF-LDP: federated implicit MF, with LDP gradient reports through a shuffler.

``client`` (device), ``server`` (untrusted aggregator), ``system`` (the simulated protocol,
:class:`~dprec.systems.fmf.system.FederatedMF`) and ``specs`` (registry entries). Its wire
messages are the shuffler's reports and the item matrix of :mod:`dprec.protocol.messages`.
Nothing is imported here, so that importing the client never loads the server.
"""

__all__: list[str] = []

