"""Registry entries of PrivRec, DP-PrivRec and their baselines (seed 002).

They are evaluated on the PrivRec protocol (user split, on-device fine-tuning,
``protocol="user-split"``) and need torch (``pip install dprec[torch]``), imported only
when a system is built.
"""

from __future__ import annotations

from dprec.errors import DprecError
from dprec.systems.audits import AuditRequest, AuditSubject, SystemAudit
from dprec.systems.base import Recommender
from dprec.systems.privrec.config import PrivRecConfig
from dprec.systems.spec import SystemSpec

__all__ = ["SPECS"]


def _build(name: str, cfg: PrivRecConfig) -> Recommender:
    try:
        from dprec.systems.privrec.system import SideNetRecommender
    except ModuleNotFoundError as e:
        if e.name and e.name.split(".")[0] == "torch":
            raise DprecError(f"{name} needs torch: pip install 'dprec[torch]' (pins "
                             "torch==2.13.0, the CPU wheel)") from None
        raise
    return SideNetRecommender(name, cfg)


def _audit(request: AuditRequest) -> AuditSubject:
    from dprec.systems.privrec.canaries import canary_run
    return canary_run(request)


_AUDIT = SystemAudit(_audit, settings=("canaries", "guesses", "support", "dataset"),
                     default_level="user", target="dp-privrec-canaries",
                     summary="DP-PrivRec: one training run with canary clients (Steinke et "
                             "al. 2023)")

_PROTOCOL = "user-split"
_GRID = {"local_lr": (0.1, 0.2, 0.4), "server_lr": (1.0, 2.0, 4.0)}
_SELF_GRID = {"local_lr": (0.05, 0.1, 0.2), "server_lr": (0.5, 1.0, 2.0)}

_DEPLOYED = {"deploy": "dprec.systems.privrec", "extras": ("torch",)}
"""This package runs as services (its deploy.py and serve.py); building a system needs torch."""

_DP_PAPER = {"rounds": 1000, "initial_clip": 40.0}
"""dp-privrec's paper settings (the only DP variant, and the only one with an audit)."""

_VARIANTS = (  # name, summary, (algorithm, inputs, dp), default grid
    ("privrec", "PrivRec (seed 002, Alg. 1): side-feature DNN, Reptile FL + FedProx, "
     "on-device fine-tuning (non-private)", ("reptile", "features", False), _GRID),
    ("dp-privrec", "DP-PrivRec (seed 002, Alg. 2): clipped updates, Gaussian noise, adaptive "
     "clipping; user-level central DP (trusted aggregator)", ("reptile", "features", True), {}),
    ("privrec-cen", "the PrivRec network trained centrally on pooled examples, then fine-tuned "
     "on the device (non-private)", ("central", "features", False),
     {"local_lr": (0.05, 0.1, 0.2, 0.4), "rounds": (5, 10, 20, 40), "batch_size": (64,)}),
    ("fofl-self", "FOFL-SELF: Reptile FL on item ids and one shared user vector, no side "
     "information (non-private)", ("reptile", "ids", False), _SELF_GRID),
    ("nn-self", "NN-SELF: MAML-based FL (second-order meta-gradients), side features "
     "(non-private)", ("maml", "features", False), _SELF_GRID),
)

SPECS: list[SystemSpec] = [
    SystemSpec(name, PrivRecConfig, _build, "ranking", dp, summary,
               {"algorithm": algorithm, "inputs": inputs, "dp": dp}, grid,
               protocol=_PROTOCOL, paper=_DP_PAPER if dp else {},
               audit=_AUDIT if dp else None, **_DEPLOYED)
    for name, summary, (algorithm, inputs, dp), grid in _VARIANTS
]
