"""dpals' proxy: the simulation's (:class:`ExactSumProxy`) and the service's secret part
(:class:`DpalsRelay`, what ``dprec serve proxy`` runs through the descriptor).

Both forward ONE batch per round, and only once ``threshold`` (= ``min_honest``) distinct
clients contributed (docs/secure_sum.md, "One batch per round"; the rule lives in
:class:`~dprec.protocol.secure_sum.in_process.InProcessSumProxy`). Each round has its own
vector length, so the relay checks and releases a round with that round's secure-sum
parameters (:mod:`dprec.systems.dpals.plan`).
"""

from __future__ import annotations

from pathlib import Path

from dprec.protocol.secure_sum.in_process import InProcessSumProxy
from dprec.protocol.secure_sum.relay import SecureSumRelay
from dprec.systems.dpals.plan import RunPlan

__all__ = ["DpalsRelay", "ExactSumProxy"]


class DpalsRelay(SecureSumRelay):
    """The layer's :class:`SecureSumRelay` with each round's own secure-sum parameters
    (:meth:`RunPlan.round`): an upload must carry the round's length, and a round the plan
    does not have is refused."""

    def __init__(self, plan: RunPlan, state_dir: Path) -> None:
        self.plan = plan
        super().__init__(lambda round: plan.round(round).params, state_dir, plan.min_honest,
                         plan.n_clients)


class ExactSumProxy(InProcessSumProxy):
    """The in-process proxy (:class:`InProcessSumProxy`): forwards the exact integer sum of
    the round's client blocks, once at least ``threshold`` clients contributed."""

    system = "dpals'"
