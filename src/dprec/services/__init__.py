"""The deployable protocol: the untrusted server and the shuffling proxy as HTTP services.

- :mod:`~dprec.services.server`: ``dprec serve server``, a deployable system's server role
  (:func:`dprec.systems.deployable.deployments`) behind an HTTP API, persisting every
  accepted batch and the round state in SQLite (WAL) before acknowledging it.
- :mod:`~dprec.services.proxy`: ``dprec serve proxy``, the shuffler: per-client tokens, one
  submission per client and round, limits, anonymity threshold, CSPRNG shuffle, batches.
- :mod:`~dprec.services.transport`: the round engine's :class:`HttpTransport`, which runs a
  simulated population against the two services (``dprec simulate --transport http``).

The services need the ``serve`` extra (``pip install 'dprec[serve]'``); the device side is
:mod:`dprec.client`, which needs only ``dprec[client]``.
"""

__all__ = ["EXIT_WITH_PARENT"]

EXIT_WITH_PARENT = "DPREC_EXIT_WITH_PARENT"
"""Set by a launcher (:class:`~dprec.services.launch.ServiceProcess`): the service stops
when its stdin reaches end of file, i.e. when the launcher has died, however it died; the
value, if not ``1``, is the launcher's temporary folder, from which the service then removes
its state folder (and the folder itself once empty)."""
