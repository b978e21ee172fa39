"""PrivRec's device half: a selected device trains the broadcast model on its own ratings
and side features exactly as the simulation's clients do, and sends its update in the clear
to the server, a trusted aggregator (seed 002, Algorithm 1 lines 10-19, Algorithm 2 lines
14-25).

- :func:`read_terms`: the published config, read as the system reads it
  (:class:`~dprec.systems.privrec.config.PrivRecConfig`), with the sizes that bound the
  device's work checked: P parameters (``n_params``; the upload is P float32, within the
  policy's ``max_message_bytes``), M clients per round (the model artefact is P + M
  words), the network's layers and the local epochs (at most :data:`MAX_LAYERS` and
  :data:`MAX_EPOCHS`). The report is marked ``trusted_aggregator``: no local noise, so a
  device policy sends it only with ``trust_aggregator``. DP-PrivRec's server adds Gaussian
  noise with z_eff (:func:`~dprec.systems.privrec.accounting.privrec_noise_multipliers`)
  times one user's sensitivity to every release the update enters; the policy charges it
  from that z (:meth:`~dprec.client.policy.DevicePolicy.cost`). DP-PrivRec's clients add
  no noise of their own (the paper's and this code's): no local-DP charge exists.
- :func:`checked_features`: the user's side features, a
  :class:`~dprec.data.features.SideFeatures` of one user row and the item catalogue (N
  rows), refused unless the network they build has exactly P parameters.
- :func:`client_upload`: :func:`~dprec.systems.privrec.client.local_updates` on a
  population of one (the simulation's step: same draws for the same generator), None when
  the broadcast did not select this device.
- :func:`device_scores`: the global model fine-tuned on the device's history, then every
  item scored, as ``SideNetRecommender.score`` does for a test user.

torch (and the accountant) are imported only by the functions that use them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import fields, replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.protocol.deployment import DeviceReader
from dprec.protocol.messages import MessageError
from dprec.systems.privrec.config import PrivRecConfig
from dprec.systems.privrec.messages import ModelBroadcast, UpdateUpload

__all__ = ["MAX_EPOCHS", "MAX_LAYERS", "checked_features", "client_upload", "decode_model",
           "device_scores", "read_terms"]

MAX_LAYERS = 64
"""Most hidden layers a device builds."""
MAX_EPOCHS = 10_000
"""Most local or fine-tuning epochs a device runs."""
_MAX_WIDTH = 1 << 16


def _config(read: DeviceReader, c: PrivRecConfig) -> PrivRecConfig:
    """The published config (the system's dataclass, its own checks run as it was decoded),
    the sizes that bound the device's work read under the policy."""
    if not isinstance(c, PrivRecConfig):
        raise DprecError(f"the protocol's config is not a PrivRec config: "
                         f"{type(c).__name__}")
    for name in ("hidden_layers", "embedding_dim", "hidden_width", "local_epochs",
                 "batch_size", "clients_per_round", "rounds"):
        read.integer(name, None, {"hidden_layers": MAX_LAYERS, "local_epochs": MAX_EPOCHS,
                                  "embedding_dim": _MAX_WIDTH, "hidden_width": _MAX_WIDTH
                                  }.get(name, 1 << 31))
    read.choice("algorithm", ("reptile", "maml"))
    read.choice("inputs", ("features", "ids"))
    read.choice("clip_update", ("linear", "geometric"))
    ft = c.finetune_epochs
    if isinstance(ft, bool) or not isinstance(ft, int) or not 0 <= ft <= MAX_EPOCHS:
        raise DprecError(f"the protocol's config.finetune_epochs must be an integer in "
                         f"[0, {MAX_EPOCHS}], got {ft!r}")
    for name in ("dp", "batched"):
        if not isinstance(getattr(c, name), bool):
            raise DprecError(f"the protocol's config.{name} must be true or false, got "
                             f"{getattr(c, name)!r}")
    for f in fields(PrivRecConfig):
        v = getattr(c, f.name)
        if isinstance(v, float) and not math.isfinite(v):
            raise DprecError(f"the protocol's config.{f.name} must be finite, got {v!r}")
    return c


def read_terms(read: DeviceReader, info: Any) -> dict[str, Any]:
    """The device's terms of a federated PrivRec protocol (fields of
    :class:`~dprec.client.policy.ProtocolTerms`; the config in ``settings``)."""
    from dprec.systems.privrec.accounting import privrec_noise_multipliers

    cfg = _config(read, info.config)
    p = read.integer("n_params", None)
    m = cfg.clients_per_round
    z = (privrec_noise_multipliers(cfg.noise_multiplier, cfg.budget_balance,
                                   cfg.server_lr)[2] if cfg.dp else 0.0)
    return {"rounds": cfg.rounds, "mechanism": "central-gaussian" if cfg.dp else "none",
            "epsilon": None, "count": 1, "message_bytes": UpdateUpload.serialized_size(p),
            "artefact": "model", "artefact_bytes": ModelBroadcast.serialized_size(p, m),
            "artefact_what": f"the global model ({p} float32 parameters) and the round's "
                             f"{m} selected clients",
            "trusted_aggregator": True, "noise_multiplier": z,
            "delta": cfg.delta if cfg.dp else 0.0,
            "settings": {"config": cfg, "n_params": p}}


def _network(terms: Any, features: Any, meta: bool = False) -> Any:
    """The system's network for ``features`` (None: FOFL-SELF's ids), its parameters on
    torch's meta device with ``meta`` (sizes only, no memory)."""
    import torch

    from dprec.models.side_net import SideFeatureNet

    cfg: PrivRecConfig = terms.settings["config"]
    side = cfg.inputs == "features"
    with torch.device("meta" if meta else "cpu"):
        return SideFeatureNet(features if side else None, terms.n_items,
                              dim=cfg.embedding_dim, hidden=cfg.hidden,
                              user_inputs="features" if side else "none",
                              item_inputs="features" if side else "id", seed=0)


def checked_features(terms: Any, features: Any) -> Any:
    """``terms`` with the user's side features, checked: a ``SideFeatures`` of one user row
    and the N-item catalogue (finite numeric values), whose network has the protocol's P
    parameters; none for FOFL-SELF (``inputs=ids``)."""
    from dprec.data.features import SideFeatures

    cfg: PrivRecConfig = terms.settings["config"]
    if cfg.inputs == "ids":
        if features is not None:
            raise DprecError(f"{terms.system} trains on item ids, not side features: call "
                             "without features=")
    else:
        if not isinstance(features, SideFeatures):
            raise DprecError(
                f"{terms.system} trains on the user's side features: pass features="
                "SideFeatures(users=<this user's one row>, items=<the N-item catalogue>) "
                f"(dprec.data.features), got {type(features).__name__}")
        if features.users.n != 1 or features.items.n != terms.n_items:
            raise DprecError(f"features must hold 1 user row and the {terms.n_items} items "
                             f"of the protocol, got {features.users.n} and "
                             f"{features.items.n}")
        for who, block in (("users", features.users), ("items", features.items)):
            if not np.all(np.isfinite(block.numeric)) or not np.all(
                    np.isin(block.multi_hot, (0.0, 1.0))):
                raise DprecError(f"features.{who}: numeric values must be finite and "
                                 "multi-hot values 0 or 1")
    size = sum(q.numel() for q in _network(terms, features, meta=True).parameters())
    if size != terms.settings["n_params"]:
        raise DprecError(f"the features' fields build a network of {size} parameters, the "
                         f"protocol's has n_params = {terms.settings['n_params']}: pass "
                         "the fields (and catalogue) the server's network was built on")
    return replace(terms, side_features=features)


def _rows(terms: Any) -> Any:
    from dprec.models.side_net import UserRows

    f = terms.side_features
    return UserRows.empty(1) if f is None else UserRows.from_block(f.users)


def decode_model(terms: Any, body: bytes) -> ModelBroadcast:
    """The server's broadcast, checked against the terms (P parameters, M clients)."""
    b = ModelBroadcast.from_bytes(body)
    want = (terms.settings["n_params"], terms.settings["config"].clients_per_round)
    if (b.params.size, b.clients.size) != want:
        raise MessageError(f"the model must carry (parameters, clients) = {want}, got "
                           f"{(b.params.size, b.clients.size)}")
    return b


def client_upload(terms: Any, history: sp.csr_matrix, round: int, rng: np.random.Generator,
                  client_id: int, artefact: Callable[[], Any]) -> bytes | None:
    """The device's update of ``round`` (:func:`~.client.local_updates` on a population of
    one, from the broadcast theta_0 and clipped to its S), or None if the round's broadcast
    did not select ``client_id``."""
    from dprec.models.local_training import LocalTrainer, torch_threads
    from dprec.models.side_net import parameters_of
    from dprec.systems.privrec.client import local_updates

    b = artefact()
    if b.round != round:
        raise DprecError(f"the server's model is for round {b.round}, the proxy's open round "
                         f"is {round}: report again once they agree")
    if int(client_id) not in set(b.clients.tolist()):
        return None
    net = _network(terms, terms.side_features)
    with torch_threads(1):
        d, unclipped = local_updates(LocalTrainer(net), parameters_of(net),
                                     sp.csr_matrix(history), np.zeros(1, np.int64),
                                     _rows(terms), b, terms.settings["config"], rng, round)
    return UpdateUpload(int(client_id), d[0], bool(unclipped[0])).to_bytes()


def device_scores(terms: Any, history: sp.csr_matrix, model: ModelBroadcast) -> np.ndarray:
    """Every item's score (logit) for this device: the broadcast model fine-tuned on its own
    history (from the device's CSPRNG), a diverged fine-tuning falling back to the global
    model."""
    import torch

    from dprec.models.local_training import LocalTrainer, torch_threads
    from dprec.models.side_net import from_vector, parameters_of
    from dprec.random import secure_generator
    from dprec.systems.privrec.client import fine_tune, finite_or

    net = _network(terms, terms.side_features)
    theta = from_vector(torch.from_numpy(model.params.copy()), parameters_of(net))
    trainer, rows = LocalTrainer(net), _rows(terms)
    with torch_threads(1):
        personal = fine_tune(trainer, theta, sp.csr_matrix(history), rows,
                             terms.settings["config"], secure_generator())
        personal, _ = finite_or(personal, theta)
        return trainer.scores(personal, rows, terms.n_items).numpy()[0].astype(np.float64)
