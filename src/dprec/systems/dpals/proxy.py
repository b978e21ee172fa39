"""dpals' in-process proxy (:class:`ExactSumProxy`); over the services the proxy's part is
the layer's (:meth:`~dprec.protocol.secure_sum.deploy.SecureSumDeployment.proxy_secrets`:
each round checked and released with that round's own secure-sum parameters and, with
``validity=prio3``, its own check).

It forwards ONE batch per round, and only once ``threshold`` (= ``min_honest``) distinct
clients contributed (docs/secure_sum.md, "One batch per round"; the rule lives in
:class:`~dprec.protocol.secure_sum.in_process.InProcessSumProxy`).
"""

from __future__ import annotations

from dprec.protocol.secure_sum.in_process import InProcessSumProxy

__all__ = ["ExactSumProxy"]


class ExactSumProxy(InProcessSumProxy):
    """The in-process proxy (:class:`InProcessSumProxy`): forwards the exact integer sum of
    the round's client blocks, once at least ``threshold`` clients contributed."""

    system = "dpals'"
