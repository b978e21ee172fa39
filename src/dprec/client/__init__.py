"""The client SDK: what runs on a user's device in a deployed dprec protocol.

Importable with the core install plus httpx (``pip install 'dprec[client]'``), without the
server extras; it never imports server code (tests/client/test_import.py).

- :class:`DeviceClient`: fetch artefacts (ETag), report through the proxy, rank on device;
- :class:`DiskLedger`: the user's privacy ledger on disk;
- :class:`RandomSource`, :class:`SecureSource` (CSPRNG, deployment), :class:`SeededSource`
  (simulation): one interface, two sources of randomness;
- :class:`ServerAPI`, :class:`ProxyAPI`: the HTTP endpoints a device uses.
"""

from dprec.client.device import DeviceClient
from dprec.client.http import ProxyAPI, ServerAPI, ServiceError, Unreachable
from dprec.client.ledger import BudgetExceededError, DiskLedger
from dprec.client.randomness import RandomSource, SecureSource, SeededSource

__all__ = [
    "BudgetExceededError",
    "DeviceClient",
    "DiskLedger",
    "ProxyAPI",
    "RandomSource",
    "SecureSource",
    "SeededSource",
    "ServerAPI",
    "ServiceError",
    "Unreachable",
]
