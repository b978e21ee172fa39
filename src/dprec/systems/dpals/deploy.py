"""dpals (aggregation=secure) as services, the device-safe half: every round is one
cryptographic secure sum (:mod:`dprec.protocol.secure_sum`) through the shuffling proxy,
as for dp-pop (:mod:`dprec.systems.dp_pop.deploy`), over several rounds:

- the optional DP count round, then one round per ALS step (:mod:`dprec.systems.dpals.plan`);
  each client uploads ONE :class:`~dprec.systems.dp_pop.messages.SumUpload` per round: its
  noisy integer vector of the round (count sample, or per-item statistics dense over all
  items and the global Gramian term), split into a mask seed sealed to the proxy and a
  share sealed to the server; the round id is bound into both boxes;
- the proxy (:class:`~dprec.systems.dpals.proxy.DpalsRelay`) opens only the seeds and at
  the close releases ONE shuffled batch once ``min_honest`` distinct senders uploaded;
- the server opens and sums it mod q, solves (:mod:`dprec.systems.dpals.serve`) and
  broadcasts the DP counts or the new item factors, which every client checks (shape,
  finite) before it solves its own vector from them.

Threat model: the server and the proxy do not collude; the guarantee holds while at least
``min_honest`` contributing clients are honest (docs/secure_sum.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dprec.protocol.deployment import ProxySecrets
from dprec.protocol.messages import MessageError
from dprec.protocol.secure_sum.params import SecureSumParams
from dprec.systems.dp_pop.deploy import SecureSumDeployment, sealed_uploads
from dprec.systems.dpals.messages import ClientBlock
from dprec.systems.dpals.plan import RunPlan, plan_of

__all__ = ["DEPLOYMENT", "DpalsDeployment", "sealed_uploads"]

_ROUND = slice(4, 12)  # the round id inside a secure-sum upload or release


def _plan(info: Any) -> RunPlan:
    return plan_of(info.config, int(info.n_items))


def _round_params(info: Any, data: bytes) -> SecureSumParams:
    """The parameters of the round a secure-sum record names (MessageError if none)."""
    plan = _plan(info)
    rid = int.from_bytes(bytes(data[_ROUND]), "big") if len(data) >= 12 else -1
    if not 0 <= rid < len(plan.rounds):
        raise MessageError(f"a dpals run has rounds 0..{len(plan.rounds) - 1}, the record "
                           f"names round {rid}: refused")
    return plan.rounds[rid].params


class DpalsDeployment(SecureSumDeployment):
    """dpals with ``aggregation = secure``: one secure-sum round per release (the optional
    count round, then each ALS step)."""

    name = "dpals"
    package = "dprec.systems.dpals"
    label = "dpals"
    block_type = ClientBlock

    def accepts(self, config: Mapping[str, Any]) -> bool:
        return "unobserved_weight" in config and "weighting" in config

    def rounds(self, config: Mapping[str, Any]) -> int:
        steps = config.get("steps")
        eps = float(config["epsilon"])
        n = int(steps) if steps is not None else 3 if eps <= 1 else 4 if eps <= 5 else 5
        return n + (config["weighting"] != "uniform")

    def n_factors(self, config: Mapping[str, Any]) -> int | None:
        return int(config["factors"])

    def mechanism(self, config: Mapping[str, Any]) -> None:
        """None: no single local mechanism; each release of each round has its own share
        ``Sk(mu_r / min_honest)``, which the plan of the description gives
        (:func:`~dprec.systems.dpals.plan.plan_of`)."""
        return None

    def round_params(self, info: Any, data: bytes) -> SecureSumParams:
        return _round_params(info, data)

    def all_params(self, info: Any) -> list[SecureSumParams]:
        return [r.params for r in _plan(info).rounds]

    def proxy_secrets(self, info: Any, state_dir: Path) -> ProxySecrets:
        from dprec.systems.dpals.proxy import DpalsRelay  # the proxy's code, lazily

        return DpalsRelay(_plan(info), state_dir)


DEPLOYMENT = DpalsDeployment()
