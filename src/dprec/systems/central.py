"""A centrally trained model on data the clients obfuscated (DPLCF's BPR-MF baseline).

DP is added by wrapping: the clients flip their bits exactly as in DPLCF, the server trains
any non-private factor model on the obfuscated matrix, and scores are U[u] . V[i].
Users unseen at training are folded in from their history where the model defines a
fold-in (implicit ALS: the exact least-squares user solve); BPR has none.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

import numpy as np
import scipy.sparse as sp

from dprec.iteration import IterationHook
from dprec.mechanisms.bitflip import BitFlip
from dprec.models.als import ALSConfig, ImplicitALS
from dprec.models.bpr import BPRMF, BPRConfig
from dprec.models.factor_model import FactorModel
from dprec.models.gmf import GMF, GMFConfig
from dprec.privacy.events import EventLog
from dprec.privacy.guarantee import Guarantee, PrivacyReport
from dprec.systems.base import (
    NotFittedError,
    Ranker,
    UnknownUserError,
    check_history,
)
from dprec.systems.reporting import privacy_report_from_log
from dprec.systems.spec import SystemSpec

__all__ = ["SPECS", "FlippedBPRConfig", "FlippedGMFConfig", "TrainedOnObfuscated",
           "factor_scores"]


def factor_scores(U: np.ndarray, V: np.ndarray, items: np.ndarray | None) -> np.ndarray:
    """U V^T, or row-wise U[r] . V[items[r, j]] for candidates (no full item sweep)."""
    if items is None:
        return U @ V.T
    return np.einsum("bf,bcf->bc", U, V[items])


class TrainedOnObfuscated(Ranker):
    """Train ``model`` on the bit-flipped matrix (``mechanism=None``: on true data)."""

    def __init__(self, name: str, model: FactorModel, mechanism: BitFlip | None,
                 epsilon: float | None = None, batch_size: int = 4096) -> None:
        self.name = name
        self.model = model
        self.config = model.config
        self.mechanism = mechanism
        self.epsilon = epsilon
        self.batch_size = batch_size
        self._n_items: int | None = None
        self.events: EventLog | None = None

    @property
    def supports_unknown_users(self) -> bool:  # type: ignore[override]
        """Fold-in exists only for implicit ALS on true data (the solve uses the history)."""
        from dprec.models.als import ImplicitALS
        return self.mechanism is None and isinstance(self.model, ImplicitALS)

    def fit(self, train: sp.csr_matrix, rng: np.random.Generator,
            on_iteration: IterationHook | None = None) -> TrainedOnObfuscated:
        self._n_items = train.shape[1]
        self.events = EventLog(train.shape[0])
        if self.mechanism is None:
            data = train
        else:
            self.events.record(0, self.mechanism.dp_event(), np.arange(train.shape[0]),
                               count=train.shape[1], unit="interaction")
            data = sp.vstack([
                sp.csr_matrix(self.mechanism.obfuscate_dense(
                    train[s:s + self.batch_size], rng, dtype=np.float32))
                for s in range(0, train.shape[0], self.batch_size)
            ]).tocsr()
        self.model.fit(data, rng, on_iteration=on_iteration)
        return self

    def score(self, history: sp.csr_matrix, items: np.ndarray | None = None,
              users: np.ndarray | None = None) -> np.ndarray:
        if self._n_items is None:
            raise NotFittedError(f"{self.name}: call fit before score")
        history, items, users = check_history(history, self._n_items, items, users)
        known_u = self.model.user_factors
        if users is None:
            users = np.full(history.shape[0], -1, np.int64)
        unknown = (users < 0) | (users >= known_u.shape[0])
        if unknown.any() and not self.supports_unknown_users:
            raise UnknownUserError(
                f"{self.name} scores only users it was trained on (learned user factors, "
                f"no fold-in); got {int(unknown.sum())} unknown user(s)")
        V = self.model.item_factors
        U = known_u[np.where(unknown, 0, users)]
        if unknown.any():
            from dprec.models.als import solve_user_factors
            cfg = self.model.config
            U = U.copy()
            U[unknown] = solve_user_factors(V, history[np.flatnonzero(unknown)],
                                            cfg.alpha, cfg.regularization)  # type: ignore[attr-defined]
        return np.asarray(factor_scores(U, V, items), dtype=np.float64)

    def parameters(self) -> dict[str, object]:
        out: dict[str, object] = asdict(self.model.config)  # type: ignore[call-overload]
        if self.mechanism is not None:
            out["mechanism"] = self.mechanism.describe()
            out["epsilon"] = self.epsilon
        return out

    def privacy_report(self) -> PrivacyReport | None:
        if self.mechanism is None or self.events is None:
            return None
        mech = self.mechanism
        return privacy_report_from_log(
            self.name, "untrusted server trains on each user's obfuscated bit vector",
            self.events, Guarantee(float(self.epsilon or mech.epsilon), mechanism="bit flip"),
            (mech.describe(),), true_level="event")


@dataclass(frozen=True)
class FlippedBPRConfig(BPRConfig):
    """BPR-MF trained by the server on symmetrically bit-flipped data (DPLCF's baseline)."""

    epsilon: float = 1.0
    """Per-bit epsilon of the symmetric flip the clients apply before upload."""


@dataclass(frozen=True)
class FlippedGMFConfig(GMFConfig):
    """GMF (NCF) trained by the server on symmetrically bit-flipped data (DPLCF's baseline)."""

    epsilon: float = 1.0
    """Per-bit epsilon of the symmetric flip the clients apply before upload."""


def _bpr(name: str, cfg: FlippedBPRConfig) -> TrainedOnObfuscated:
    base = {f.name: getattr(cfg, f.name) for f in fields(BPRConfig)}
    return TrainedOnObfuscated(name, BPRMF(BPRConfig(**base)), BitFlip.symmetric(cfg.epsilon),
                               epsilon=cfg.epsilon)


def _gmf(name: str, cfg: FlippedGMFConfig) -> TrainedOnObfuscated:
    base = {f.name: getattr(cfg, f.name) for f in fields(GMFConfig)}
    return TrainedOnObfuscated(name, GMF(GMFConfig(**base)), BitFlip.symmetric(cfg.epsilon),
                               epsilon=cfg.epsilon)


def _als(name: str, cfg: ALSConfig) -> TrainedOnObfuscated:
    return TrainedOnObfuscated(name, ImplicitALS(cfg), None)


SPECS: list[SystemSpec] = [
    SystemSpec("bpr-mf", FlippedBPRConfig, _bpr, "ranking", True,
               "BPR-MF trained centrally on symmetrically flipped data"),
    SystemSpec("gmf", FlippedGMFConfig, _gmf, "ranking", True,
               "GMF (NCF) trained centrally on symmetrically flipped data"),
    SystemSpec("mf-np", ALSConfig, _als, "ranking", False,
               "implicit ALS on the true data (non-private)", {},
               {"factors": (16, 32, 64, 128), "regularization": (3.0, 10.0, 30.0, 100.0, 300.0),
                "alpha": (1.0, 3.0, 10.0, 30.0)}),
]
"""bpr-mf, gmf and mf-np (the registry reads this list)."""
