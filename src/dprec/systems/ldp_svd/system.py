"""Laplace-SVD, Laplace-RR-SVD (seed 001) and LDP-SVD as one simulated protocol
(docs/architecture.md §3).

One round of the engine, no proxy: clients normalise and perturb every rating
(:mod:`.client`), the server decodes the reports and trains Funk SVD (:mod:`.server`), and
predictions are made on the server with the trained model, as in the paper.

| system          | per-rating mechanism                      | true guarantee per rating |
|-----------------|-------------------------------------------|---------------------------|
| laplace-svd     | x + Lap(1/eps) (the paper's baseline)     | eps, two-sided            |
| laplace-rr-svd  | x w.p. e^eps2/(1+e^eps2), else x + Lap(1/eps1) | none (claimed eps1+eps2) |
| ldp-svd         | Laplace, Duchi or piecewise at eps        | eps, two-sided            |

Privacy is accounted from two event logs. Rating values (``levels.*_values``, seed 001's
unit, with the items a user rated held fixed): each rating is one report of the mechanism
(unit "interaction"), so per rating eps and per user the composition over the user's n_u
ratings (basic n_u eps; PLD for the worst-case user). The whole profile (``levels.event``,
``levels.user``, ``levels.user_basic``: what the server learns, which items were rated
included): each of the N items gives one channel, a report or none. Without hide_items
the server sees exactly which items were rated (no guarantee, ``NonPrivateDpEvent`` per
item: eps = inf). With hide_items every unrated item is reported with probability q, its
value the mechanism applied to the scale midpoint; then for one item, rated (value r)
versus unrated, a report's likelihood ratio is at most e^eps / q (the mechanism's ratio
between r and the midpoint is <= e^eps), while "no report" proves the item unrated:
one-sided, dominated by a bit flip with p = 1, q' = q e^-eps (``BitFlipDpEvent``). That
event also dominates a change of value (eps two-sided <= ln(1/q) + eps, one presence
direction), so it bounds the item's whole channel; composed over the N items per user.
"""

from __future__ import annotations

import math
from dataclasses import replace

import dp_accounting
import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.iteration import IterationHook
from dprec.mechanisms.laplace_rr import LaplaceRR
from dprec.mechanisms.numeric import BinaryMechanism, LaplaceMechanism, PiecewiseMechanism
from dprec.models.funk_svd import FunkSVD
from dprec.privacy.events import BitFlipDpEvent, EventLog, LocalReportDpEvent
from dprec.privacy.guarantee import Guarantee, PrivacyReport
from dprec.privacy.levels import account
from dprec.protocol.engine import Transport, run_protocol
from dprec.systems.base import NotFittedError, RatingPredictor
from dprec.systems.ldp_svd import client, server
from dprec.systems.ldp_svd.config import (
    LaplaceRRSVDConfig,
    LDPSVDConfig,
    Mechanism,
    SVDConfig,
    SVDFields,
)
from dprec.systems.ldp_svd.messages import Scale

__all__ = [
    "LDPSVDConfig", "LaplaceRRSVDConfig", "LocalRatingSVD", "Mechanism", "PROFILE_SCOPE",
    "RatingMechanism", "SVDConfig", "SVDFields", "THREAT_MODEL", "VALUES_SCOPE", "membership_event",
]

RatingMechanism = LaplaceMechanism | LaplaceRR | BinaryMechanism | PiecewiseMechanism

THREAT_MODEL = (
    "untrusted server receives once, from every user, one perturbed value per reported item "
    "with the user's id and the item id (no proxy); it sees which items each user reported "
    "(without hide_items: exactly the rated items, as seed 001 says); it trains SVD and "
    "predicts on the server"
)




def membership_event(config: SVDConfig, mechanism: RatingMechanism) -> dp_accounting.DpEvent:
    """What one item's report (or its absence) tells about whether the user rated it.

    No fakes: the item set is sent as is (``NonPrivateDpEvent``). Fakes with probability q
    and a mechanism with eps: ``BitFlipDpEvent(p=1, q e^-eps)`` (see the module docstring);
    q = 1 (every item reported): ``LocalReportDpEvent(eps)``, two-sided.
    """
    if not config.hide_items:
        return dp_accounting.NonPrivateDpEvent()
    if isinstance(mechanism, LaplaceRR) or isinstance(config, LaplaceRRSVDConfig):
        raise DprecError("hide_items needs an eps-LDP mechanism, not Laplace-RR")
    if config.fake_rate == 1:  # every item reported: rated vs unrated is a value change only
        return LocalReportDpEvent(mechanism.epsilon)
    return BitFlipDpEvent(1.0, float(config.fake_rate) * math.exp(-mechanism.epsilon))


class LocalRatingSVD(RatingPredictor):
    """Funk SVD trained by an untrusted server on locally perturbed ratings (seed 001).

    One round of the engine: :class:`client.RatingClients` upload, :class:`server.SVDServer`
    trains. ``predict`` uses the server's model, clipped to the public rating scale; users
    and items unknown to it get the global mean plus the known biases. The scale is public:
    ``rating_min``/``rating_max`` if set, else the data set's declared scale (handed over by
    :meth:`set_rating_scale`); it is never read off the training ratings.
    """

    networked = True

    uses_rating_scale = True

    def __init__(self, name: str, config: SVDConfig) -> None:
        self.name = name
        self.config = config
        self.mechanism = config.build_mechanism()
        self.events: EventLog | None = None
        self.membership: EventLog | None = None
        self.scale: Scale | None = None
        self.declared_scale: Scale | None = None
        self._model: FunkSVD | None = None
        self._diag: dict[str, object] = {}
        self.transport: Transport | None = None
        """Where the server (and a relaying proxy) run: None in process, else e.g. the HTTP
        services (:class:`~dprec.services.transport.HttpTransport`); the same roles."""

    def set_rating_scale(self, scale: tuple[float, float] | None) -> None:
        """The data set's declared rating scale (None: it declares none)."""
        self.declared_scale = None if scale is None else Scale(*scale)

    def _scale(self) -> Scale:
        cfg = self.config
        if cfg.rating_min is not None and cfg.rating_max is not None:
            return Scale(cfg.rating_min, cfg.rating_max)
        if self.declared_scale is not None:
            return self.declared_scale
        raise DprecError(
            f"{self.name}: the public rating scale is unknown: the data set declares none and "
            "rating_min/rating_max are not set. Set them (--param rating_min=1 --param "
            "rating_max=5), or declare a csv: file's scale (csv:PATH?rating_min=1&"
            "rating_max=5); the training ratings' own min and max are private and never used")

    def fit(self, train: sp.csr_matrix, rng: np.random.Generator,
            on_iteration: IterationHook | None = None) -> LocalRatingSVD:
        if not sp.issparse(train):
            raise DprecError(f"{self.name}: train must be a scipy.sparse matrix, "
                             f"got {type(train).__name__}")
        train = sp.csr_matrix(train)
        if train.nnz and not np.all(np.isfinite(train.data)):
            raise DprecError(f"{self.name}: train ratings contain NaN or infinite values")
        cfg = self.config
        n_users, n_items = train.shape
        if cfg.n_users is not None and cfg.n_users != n_users:
            raise DprecError(f"{self.name}: n_users = {cfg.n_users}, but the training matrix "
                             f"has {n_users} users")
        scale = self._scale()
        fake_rate = float(cfg.fake_rate) if cfg.hide_items else 0.0
        clients = client.RatingClients(train, scale, self.mechanism, cfg.batch_size, fake_rate)
        srv = server.SVDServer(n_users, n_items, scale, self.mechanism, cfg.svd_config(),
                               cfg.noise_weighting)
        self.events = EventLog(n_users)
        run = run_protocol(srv, clients, 1, rng, self.events, transport=self.transport,
                           on_iteration=on_iteration)
        if run.rounds_without_update:
            raise DprecError(f"{self.name}: no rating reached the server ({n_users} users)")
        self.membership = EventLog(n_users)
        self.membership.record(0, membership_event(cfg, self.mechanism), np.arange(n_users),
                               count=n_items, unit="interaction")
        self._model = run.broadcast
        self.scale = scale
        self._diag = {
            "reports": clients.reports,
            "fake_reports": clients.fake_reports,
            "senders": srv.senders,
            "report_weight": srv.weight,
            "rating_scale": [scale.low, scale.high],
            "seconds_by_role": dict(run.seconds),
        }
        return self

    def predict(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        if self._model is None or self.scale is None:
            raise NotFittedError(f"{self.name}: call fit before predict")
        pred = self._model.predict(users, items)
        return np.clip(pred, self.scale.low, self.scale.high)

    @property
    def model(self) -> FunkSVD | None:
        """The server's trained Funk SVD."""
        return self._model

    def diagnostics(self) -> dict[str, object]:
        return dict(self._diag)

    def privacy_report(self, delta: float = 1e-6) -> PrivacyReport | None:
        """``levels``: the whole profile (module docstring); ``*_values``: values only."""
        if self.events is None or self.membership is None:
            return None
        cfg = self.config
        mech = self.mechanism
        profile = account(self.membership, delta)
        values = account(self.events, delta)
        rule = (f"each unrated item reported with probability q = {cfg.fake_rate:g}, true "
                "value = scale midpoint" if cfg.hide_items else "only rated items reported")
        bound = _PROFILE_BOUND[bool(cfg.hide_items)]
        levels = {
            "event": (profile.event, f"{PROFILE_SCOPE['event']}; {bound}"),
            "user": (profile.user, f"{PROFILE_SCOPE['user']}; {bound}"),
            "user_basic": (profile.user_basic, f"{PROFILE_SCOPE['user']}; {bound}"),
            "event_values": (values.event, VALUES_SCOPE["event"]),
            "user_values": (values.user, VALUES_SCOPE["user"]),
            "user_values_basic": (values.user_basic, VALUES_SCOPE["user"]),
        }
        as_json = {k: None if g is None else _scoped(g, scope).to_json()
                   for k, (g, scope) in levels.items()}
        body: dict[str, object] = {
            "levels": as_json,
            "scope": {"event, user, user_basic": PROFILE_SCOPE["user"],
                      "event_values, user_values, user_values_basic": VALUES_SCOPE["user"]},
            "events": self.events.to_json(),
            "item_membership": {"rule": rule, "events": self.membership.to_json()},
        }
        threat = THREAT_MODEL + (
            f"; hide_items: each unrated item is also reported with probability "
            f"{cfg.fake_rate:g} (fake value = the scale midpoint, perturbed alike)"
            if cfg.hide_items else "")
        return PrivacyReport(self.name, threat, _scoped(values.event, VALUES_SCOPE["event"]),
                             cfg.claimed(), (mech.describe(),), body)


PROFILE_SCOPE = {
    "event": "scope: one rating, its presence and its value (rated with any value vs unrated): "
             "the item's report or its absence",
    "user": "scope: the user's whole profile, which items were rated and the values: one "
            "channel per item (a report or none), composed over all N items",
}
"""What ``levels.event``/``user``/``user_basic`` cover (the untrusted server's whole view)."""
_PROFILE_BOUND = {
    False: "only rated items are reported: the server sees which items were rated, so no "
           "finite eps",
    True: "each item's channel is dominated by the event below, a change of value included "
          "(its eps <= ln(1/q) + eps)",
}
VALUES_SCOPE = {
    "event": "scope: the value of one rating, which items were rated held fixed (the server "
             "sees them); with the item set: levels.event",
    "user": "scope: the values of all of a user's ratings, which items were rated held fixed "
            "(the server sees them); the whole profile: levels.user",
}
"""What ``levels.*_values`` and ``true`` cover: rating values only (seed 001's unit)."""


def _scoped(g: Guarantee, scope: str) -> Guarantee:
    return replace(g, notes=(scope, *g.notes))
