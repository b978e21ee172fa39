"""Settings of PrivRec, DP-PrivRec and their baselines (seed 002); no torch import here."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from dprec.errors import DprecError

__all__ = ["Algorithm", "ClipUpdate", "Inputs", "PrivRecConfig"]

Algorithm = Literal["reptile", "maml", "central"]
Inputs = Literal["features", "ids"]
ClipUpdate = Literal["linear", "geometric"]


@dataclass(frozen=True)
class PrivRecConfig:
    """One configuration for the side-feature network trained federated or centrally."""

    algorithm: Algorithm = "reptile"
    """reptile: PrivRec's Algorithm 1 (FedProx local SGD, Reptile server step); maml: NN-SELF
    (second-order MAML meta-gradients); central: PrivRec-CEN (pooled mini-batch SGD)."""
    inputs: Inputs = "features"
    """features: side features only (PrivRec); ids: item-id embeddings and one shared user
    vector, no side information (FOFL-SELF)."""
    dp: bool = False
    """DP-PrivRec (Algorithm 2): clip, noise, adaptive clipping, accounted at user level."""
    rounds: int = 60
    """E1: global rounds (central: epochs over the pooled training examples)."""
    local_epochs: int = 5
    """E2: local epochs of mini-batch SGD per client per round (maml: inner steps)."""
    clients_per_round: int = 30
    """M: clients per round, drawn without replacement (a fixed-size batch)."""
    batch_size: int = 32
    """Local mini-batch size (central: the pooled mini-batch size)."""
    local_lr: float = 0.1
    """alpha1: the clients' SGD learning rate (maml: the inner learning rate)."""
    server_lr: float = 1.0
    """alpha3: the server's Reptile step on the mean update (maml: meta learning rate)."""
    mu: float = 0.01
    """Proximal coefficient: local loss + mu/2 |theta - theta0|^2 (FedProx, Eq. 7)."""
    negative_ratio: float = 1.0
    """Never-interacted items sampled per positive (besides the user's rated negatives)."""
    threshold: float = 3.0
    """Ratings above this are positives."""
    finetune_epochs: int = 5
    """On-device epochs of a test user on the fine-tune half (maml: inner steps)."""
    embedding_dim: int = 64
    """Embedding size of each categorical value, genre tag or id."""
    hidden_width: int = 128
    """Width of the first hidden layer; each of the next ones halves it (min 4)."""
    hidden_layers: int = 4
    """Number of hidden ReLU layers."""
    batched: bool = True
    """Train a round's clients together (torch.func.vmap); false: one client at a time
    (the same numbers, slower; the benchmark's reference)."""
    noise_multiplier: float = 1.0
    """z (DP only): sigma_D = 2 S z / M sqrt(1/(1-h)), sigma_b = 2 z / M sqrt(1/h)."""
    initial_clip: float = 0.1
    """S at round 0 (DP only). The paper's 40 for MovieLens (``--preset paper``) makes
    sigma_D about 4.9 per parameter at M = 30; with 1.0 (and 0.1 with clip_lr 0.2) the bound
    grows towards the update norms and the model diverges within 30 rounds on ML-100K."""
    target_quantile: float = 0.9
    """gamma (DP only): the fraction of unclipped updates adaptive clipping aims at."""
    budget_balance: float = 0.7
    """h (DP only): the split of the noise budget between the clip count and the update."""
    clip_lr: float = 0.01
    """alpha4 (DP only; the paper gives no value): learning rate of the clip bound update."""
    clip_update: ClipUpdate = "linear"
    """linear: S -= alpha4 (beta~ - gamma) (the paper); geometric: S *= exp(-alpha4 (beta~ -
    gamma)) (Andrew et al. 2021)."""
    delta: float = 1e-6
    """Target delta of the reported guarantee (DP only)."""
    n_params: int | None = None
    """The network's parameter count as a deployment publishes it (the proxy and the server
    bound an update by it); None: the count of the network built from the data. Set, a fit
    refuses a network of another size."""

    def __post_init__(self) -> None:
        ints = {"rounds": 1, "local_epochs": 1, "clients_per_round": 1, "batch_size": 1,
                "finetune_epochs": 0, "embedding_dim": 1, "hidden_width": 1,
                "hidden_layers": 1}
        for name, low in ints.items():
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise DprecError(f"{name} must be an integer >= {low}, got {v!r}")
        for name in ("local_lr", "server_lr", "noise_multiplier", "initial_clip", "clip_lr"):
            v = getattr(self, name)
            if not (isinstance(v, int | float) and math.isfinite(v) and v > 0):
                raise DprecError(f"{name} must be a finite number > 0, got {v!r}")
        for name in ("mu", "negative_ratio"):
            v = getattr(self, name)
            if not (isinstance(v, int | float) and math.isfinite(v) and v >= 0):
                raise DprecError(f"{name} must be a finite number >= 0, got {v!r}")
        if self.n_params is not None and (isinstance(self.n_params, bool)
                                          or not isinstance(self.n_params, int)
                                          or self.n_params < 1):
            raise DprecError(f"n_params must be an integer >= 1 or None, got {self.n_params!r}")
        if not 0 < self.target_quantile < 1:
            raise DprecError(f"target_quantile must be in (0, 1), got {self.target_quantile}")
        if not 0 < self.budget_balance < 1:
            raise DprecError(f"budget_balance must be in (0, 1), got {self.budget_balance}")
        if not 0 < self.delta < 1:
            raise DprecError(f"delta must be in (0, 1), got {self.delta}")
        if not math.isfinite(self.threshold):
            raise DprecError(f"threshold must be finite, got {self.threshold}")
        if self.dp and self.algorithm != "reptile":
            raise DprecError("dp=true is DP-PrivRec: it needs algorithm=reptile")

    @property
    def hidden(self) -> tuple[int, ...]:
        return tuple(max(4, self.hidden_width >> i) for i in range(self.hidden_layers))
