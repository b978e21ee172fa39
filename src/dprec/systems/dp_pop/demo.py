"""dp-pop's part of the browser demo (``dprec serve demo``, issue 34 §2): the demo runs this
system, and what about it is dp-pop's lives here, not in the generic page service
(:mod:`dprec.services.demo` reaches it through :func:`dprec.systems.deployable.demo_system`).

- :func:`check_settings`: the demo's settings as a dp-pop config (its own one-line refusals);
- :func:`page_round`: the calibration the page's TypeScript SDK takes for the one round it was
  built for (the SDK does not recompute the PLD accountant's mu): the config as the server
  publishes it, mu per share, the Prio3 check's terms (T, S, B2, k, proofs) and the truncated
  shares' total variation n (eta + eta_2), all from the config alone
  (:func:`~dprec.systems.dp_pop.calibration.calibrate`); the page refuses any other config, so
  a server's numbers never reach the device's noise;
- :func:`released`: the released counts and contributors of the server's ``model`` artefact.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dprec.protocol.secure_sum.checks import check_terms
from dprec.systems.config_json import config_to_json
from dprec.systems.dp_pop.calibration import calibrate, contribution_check
from dprec.systems.dp_pop.config import DpPopConfig
from dprec.systems.dp_pop.messages import PopularityModel

__all__ = ["SYSTEM", "check_settings", "page_round", "released"]

SYSTEM = "dp-pop"
"""The registered name the demo's server runs."""


def _config(params: dict[str, str]) -> DpPopConfig:
    return DpPopConfig(epsilon=float(params["epsilon"]), k=int(params["k"]),
                       n_clients=int(params["n_clients"]),
                       min_honest=int(params["min_honest"]))


def check_settings(params: dict[str, str]) -> None:
    """Refuse (DpPopConfig's one-line errors) settings that are no dp-pop round."""
    _config(params)


def page_round(params: dict[str, str], n_items: int) -> dict[str, Any]:
    """The page's round and its calibration (module docstring), as JSON."""
    config = _config(params)
    check = contribution_check(config, n_items, int(params["n_clients"]))
    assert check is not None and check.truncation is not None
    t = check.truncation
    return {"config": config_to_json(config),  # as ProtocolInfo.to_json publishes it
            "nItems": int(n_items),
            "muShare": calibrate(config, n_items, int(params["n_clients"])).share.mu,
            "terms": check_terms(check),
            "truncationTv": t.clients * (t.per_client_tv + check.l2_tv)}


def released(model: bytes) -> tuple[np.ndarray, int]:
    """(counts, contributors) of the server's ``model`` artefact (decoded, every length
    checked)."""
    decoded = PopularityModel.from_bytes(model)
    return np.asarray(decoded.counts), int(decoded.contributors)
