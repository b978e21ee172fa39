"""The client SDK: what runs on a user's device in a deployed dprec protocol.

Importable with the core install plus httpx (``pip install 'dprec[client]'``), without the
server extras; it never imports server code (tests/client/test_import.py).

- :class:`DeviceClient`: fetch artefacts (ETag), report through the proxy, rank on device
  (the LDP systems, and dp-pop, dpals and dp-fedavg on the secure sum);
- :class:`DevicePolicy`: what the device accepts (mechanisms, noise, sizes), the user's own;
- :class:`DiskLedger`: the user's privacy ledger on disk, keyed on (run, round) sent, locked
  and re-read before every charge (safe with several processes on one folder);
- :class:`BadReply`, :class:`PolicyViolation`, :class:`RunChanged`: what a device refuses;
- :class:`RandomSource`, :class:`SecureSource` (CSPRNG, deployment), :class:`SeededSource`
  (simulation): one interface, two sources of randomness;
- :class:`ServerAPI`, :class:`ProxyAPI`: the HTTP endpoints a device uses.
"""

from dprec.client.device import DeviceClient
from dprec.client.errors import BadReply, PolicyViolation, RunChanged
from dprec.client.http import ProxyAPI, ServerAPI, ServiceError, Unreachable
from dprec.client.ledger import BudgetExceededError, DiskLedger
from dprec.client.policy import DevicePolicy
from dprec.client.randomness import RandomSource, SecureSource, SeededSource

__all__ = [
    "BadReply",
    "BudgetExceededError",
    "DeviceClient",
    "DevicePolicy",
    "DiskLedger",
    "PolicyViolation",
    "ProxyAPI",
    "RandomSource",
    "RunChanged",
    "SecureSource",
    "SeededSource",
    "ServerAPI",
    "ServiceError",
    "Unreachable",
]
