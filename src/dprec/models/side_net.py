"""PrivRec's network (seed 002, §2.1, Eq. 1): side features in, preference out, no ids.

User vector U = [one 64-d embedding per categorical field; the mean of the embeddings of
its active tags (multi-hot, e.g. genres); numeric values as given (min-max scaled by the
dataset layer)], item vector V likewise. [U; V] -> ``hidden`` fully connected layers
(ReLU) -> one logit; the preference is sigmoid(logit). Loss: binary cross-entropy (Eq. 2).

Inputs can also be ids, for the baselines without side information (FOFL-SELF): users
``"none"`` (one learned vector shared by every user, personalised only by on-device
fine-tuning) and items ``"id"`` (an embedding per item).

Everything the functional training code needs is a plain ``dict`` of parameters
(:func:`torch.func.functional_call`); item inputs are buffers (public catalogue data).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from torch import nn

from dprec.data.features import FeatureBlock, SideFeatures
from dprec.errors import DprecError

__all__ = [
    "ItemInputs", "SideFeatureNet", "UserInputs", "UserRows", "from_vector", "parameters_of",
    "to_matrix", "to_vector",
]

UserInputs = Literal["features", "none"]
ItemInputs = Literal["features", "id"]


@dataclass(frozen=True)
class UserRows:
    """Per-user inputs as tensors: categorical codes, numeric values, multi-hot tags."""

    categorical: torch.Tensor
    numeric: torch.Tensor
    multi_hot: torch.Tensor

    @property
    def n_rows(self) -> int:
        return int(self.categorical.shape[0])

    def take(self, index: np.ndarray | torch.Tensor) -> UserRows:
        idx = torch.as_tensor(np.asarray(index), dtype=torch.long)
        return UserRows(self.categorical[idx], self.numeric[idx], self.multi_hot[idx])

    @classmethod
    def from_block(cls, block: FeatureBlock) -> UserRows:
        return cls(torch.as_tensor(block.categorical, dtype=torch.long),
                   torch.as_tensor(block.numeric, dtype=torch.float32),
                   torch.as_tensor(block.multi_hot, dtype=torch.float32))

    @classmethod
    def empty(cls, n: int) -> UserRows:
        """Rows without any feature (users as ``"none"``)."""
        return cls(torch.zeros((n, 0), dtype=torch.long), torch.zeros((n, 0)),
                   torch.zeros((n, 0)))


class _Side(nn.Module):
    """One side's vector from categorical codes, tags and numeric values."""

    def __init__(self, block: FeatureBlock | None, dim: int) -> None:
        super().__init__()
        cards = tuple(block.cardinalities) if block is not None else ()
        n_tags = block.multi_hot.shape[1] if block is not None else 0
        n_num = block.numeric.shape[1] if block is not None else 0
        offsets = np.concatenate([[0], np.cumsum(cards)[:-1]]) if cards else np.zeros(0)
        self.register_buffer("offsets", torch.as_tensor(offsets, dtype=torch.long))
        self.categorical = nn.Embedding(int(sum(cards)), dim) if cards else None
        self.tags = nn.Parameter(torch.randn(n_tags, dim)) if n_tags else None
        self.n_fields = len(cards)
        self.width = len(cards) * dim + (dim if n_tags else 0) + n_num

    def forward(self, categorical: torch.Tensor, numeric: torch.Tensor,
                multi_hot: torch.Tensor) -> torch.Tensor:
        parts = []
        if self.categorical is not None:
            emb = self.categorical(categorical + self.offsets)
            parts.append(emb.reshape(*emb.shape[:-2], -1))
        if self.tags is not None:
            count = multi_hot.sum(-1, keepdim=True).clamp(min=1.0)
            parts.append((multi_hot @ self.tags) / count)
        if numeric.shape[-1]:
            parts.append(numeric)
        return torch.cat(parts, dim=-1)


class SideFeatureNet(nn.Module):
    """sigmoid(MLP([U; V])) with U, V from side features (or ids); see the module docstring.

    ``forward(user_cat, user_num, user_tags, items)`` gives logits for rows of users (b, .)
    and item indices (b,); :meth:`user_logits` scores items for a single user.
    """

    def __init__(self, features: SideFeatures | None, n_items: int, *, dim: int = 64,
                 hidden: tuple[int, ...] = (128, 64, 32, 16),
                 user_inputs: UserInputs = "features", item_inputs: ItemInputs = "features",
                 seed: int = 0) -> None:
        super().__init__()
        if dim < 1 or not hidden or min(hidden) < 1:
            raise DprecError(f"dim and every hidden width must be >= 1, got {dim}, {hidden}")
        if (user_inputs == "features" or item_inputs == "features") and features is None:
            raise DprecError("side-feature inputs need the dataset's side features")
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed))
            if user_inputs == "features":
                assert features is not None
                self.user = _Side(features.users, dim)
                self.user_vector = None
            else:
                self.user = _Side(None, dim)
                self.user_vector = nn.Parameter(torch.randn(dim))
            if item_inputs == "features":
                assert features is not None
                if features.items.n != n_items:
                    raise DprecError(f"item features have {features.items.n} rows for "
                                     f"{n_items} items")
                self.item = _Side(features.items, dim)
                blk = features.items
                self.register_buffer("item_cat", torch.as_tensor(blk.categorical,
                                                                 dtype=torch.long))
                self.register_buffer("item_num", torch.as_tensor(blk.numeric,
                                                                 dtype=torch.float32))
                self.register_buffer("item_tags", torch.as_tensor(blk.multi_hot,
                                                                  dtype=torch.float32))
                self.item_id = None
            else:
                self.item = None
                self.item_id = nn.Embedding(n_items, dim)
            width = ((dim if self.user_vector is not None else self.user.width)
                     + (self.item.width if self.item is not None else dim))
            layers: list[nn.Module] = []
            for h in hidden:
                layers += [nn.Linear(width, h), nn.ReLU()]
                width = h
            layers.append(nn.Linear(width, 1))
            self.mlp = nn.Sequential(*layers)
        self.n_items = int(n_items)

    def _items(self, items: torch.Tensor) -> torch.Tensor:
        if self.item_id is not None:
            return self.item_id(items)
        assert self.item is not None
        return self.item(self.item_cat[items], self.item_num[items], self.item_tags[items])

    def _users(self, cat: torch.Tensor, num: torch.Tensor, tags: torch.Tensor) -> torch.Tensor:
        if self.user_vector is not None:  # no user features: the shared, fine-tuned vector
            return self.user_vector.expand(*cat.shape[:-1], -1)
        return self.user(cat, num, tags)

    def forward(self, user_cat: torch.Tensor, user_num: torch.Tensor, user_tags: torch.Tensor,
                items: torch.Tensor) -> torch.Tensor:
        """Logits of rows (user features of row r, item ``items[r]``)."""
        u = self._users(user_cat, user_num, user_tags)
        return self.mlp(torch.cat([u, self._items(items)], dim=-1)).squeeze(-1)

    def user_logits(self, user_cat: torch.Tensor, user_num: torch.Tensor,
                    user_tags: torch.Tensor, items: torch.Tensor) -> torch.Tensor:
        """Logits of one user (features 1-d) for the item indices ``items`` (L,)."""
        u = self._users(user_cat, user_num, user_tags)
        v = self._items(items)
        return self.mlp(torch.cat([u.expand(v.shape[0], -1), v], dim=-1)).squeeze(-1)


def parameters_of(net: nn.Module) -> dict[str, torch.Tensor]:
    """The trainable parameters as a detached dict (the state a round broadcasts)."""
    return {k: v.detach().clone() for k, v in net.named_parameters()}


def to_vector(params: dict[str, torch.Tensor]) -> torch.Tensor:
    """One client's parameters as a vector (P,), in the dict's order."""
    return torch.cat([p.reshape(-1) for p in params.values()])


def to_matrix(stacked: dict[str, torch.Tensor]) -> torch.Tensor:
    """Stacked parameters (m, ...) of m clients as an (m, P) matrix."""
    m = next(iter(stacked.values())).shape[0]
    return torch.cat([p.reshape(m, -1) for p in stacked.values()], dim=1)


def from_vector(vector: torch.Tensor, like: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The inverse of :func:`to_vector` for parameters shaped as ``like``."""
    size = sum(p.numel() for p in like.values())
    if vector.numel() != size:
        raise DprecError(f"parameter vector has {vector.numel()} entries, the model {size}")
    out, start = {}, 0
    for k, p in like.items():
        out[k] = vector[start:start + p.numel()].reshape(p.shape).to(p.dtype)
        start += p.numel()
    return out
