"""Laplace-SVD, Laplace-RR-SVD and LDP-SVD: local DP on explicit ratings (seed 001;
docs/architecture.md §3).

``client`` (device), ``server`` (untrusted aggregator), ``messages`` (what travels between
them), ``system`` (the simulated protocol) and ``specs`` (registry entries). Nothing is
imported here, so that importing the client never loads the server.
"""

__all__: list[str] = []

