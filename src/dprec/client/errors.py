"""What a device refuses: every refusal of the SDK is a :class:`~dprec.errors.DprecError`
that names what was wrong (the field, the rule and the value).

- :class:`BadReply`: a service answered something malformed (not JSON, a missing or
  ill-typed field, a body larger than declared or than expected);
- :class:`PolicyViolation`: a well-formed protocol that the device's own
  :class:`~dprec.client.policy.DevicePolicy` does not accept (a mechanism, an epsilon, a
  size); nothing was computed or sent;
- :class:`RunChanged`: the server describes another protocol run than the one the device
  pinned; the device reports to it only after :meth:`DeviceClient.join_new_run`.
"""

from __future__ import annotations

from dprec.errors import DprecError

__all__ = ["BadReply", "PolicyViolation", "RunChanged"]


class BadReply(DprecError):
    """A service's reply is malformed or larger than it can be: names the endpoint and why."""


class PolicyViolation(DprecError):
    """The protocol asks for something the device policy refuses: names the field and limit."""


class RunChanged(DprecError):
    """The server's protocol description differs from the run this device is pinned to."""
