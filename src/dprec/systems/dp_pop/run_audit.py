"""dp-pop's noise for the audit of a finished run (``dprec audit skellam-run``;
:mod:`dprec.audit.runs`): the per-client share :func:`~dprec.systems.dp_pop.calibration.calibrate`
hands the clients (``PopClients`` add ``share.noise``); ``min_honest`` honest shares on the
audited user's ``k`` coordinates, summed, are ``Sk(min_honest k share_mu)`` (Poisson parts
add), drawn by the same :class:`~dprec.mechanisms.skellam.SkellamMechanism`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from dprec.mechanisms.skellam import SkellamMechanism
from dprec.systems.audits import Noise
from dprec.systems.config_json import recorded_config
from dprec.systems.dp_pop.calibration import calibrate
from dprec.systems.dp_pop.config import DpPopConfig

__all__ = ["run_noise"]


def run_noise(params: Mapping[str, Any], n_items: int, n_clients: int,
                  min_honest: int) -> tuple[Noise, int, dict[str, object]]:
    """``params``: a finished run's recorded config fields (its results file)."""
    cal = calibrate(replace(recorded_config(DpPopConfig, params), min_honest=min_honest),
                    n_items, n_clients)
    k = int(cal.l1)
    summed = SkellamMechanism(cal.share.mu * min_honest * k)
    return (lambda m, rng: summed.noise(m, rng)), k, {"share_mu": cal.share.mu}
