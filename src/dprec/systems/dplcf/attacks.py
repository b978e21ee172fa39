"""DPLCF's poisoning attack (:mod:`dprec.protocol.poisoning`): attackers send worst-case
valid uploads (:class:`~dprec.systems.dplcf.messages.ObfuscatedBits`, one N-bit vector per
client; a row's sender is its position in the round, the order the clients step in).

- ``untargeted``: the all-ones vector. Under the unbiased estimator n_hat = A^-1 m every
  upload enters linearly, and an observed (1, 1) pair has the largest coefficient on
  n_hat11 (p^2 / (p - q)^2 for symmetric flips, about 2.5 at eps = 1, against about -0.9
  for (1, 0) and 0.3 for (0, 0)): all-ones adds the most spurious co-occurrence any valid
  vector can add, to every pair at once. It needs no knowledge and drives the estimated
  Jaccard of every low-count pair toward 1, so rare items become each other's neighbours.
- ``promote``: ones on ``targets`` random target items and on the ``fillers`` most popular
  items (ranked by the honest uploads' column counts: the bit-flip estimate of popularity is
  increasing in them), zeros elsewhere (Cao et al.'s maximal-gain attack, aimed at item-kNN).
  Every (target, filler) and (filler, filler) pair gets the (1, 1) coefficient per
  attacker, every (target or filler, other item) pair the negative (1, 0) one. The targets'
  neighbour lists fill with the popular items most users hold (so they are scored high for
  everyone: up to ``targets`` items pushed into every top-N list, the worst case for
  full-ranking HR@N when ``targets`` >= N), and the targets enter the popular items' own
  lists, displacing the true neighbours that users hold. A few fillers hurt most: with
  many, the popular items' estimated similarities to each other grow instead (on ML-100K
  at 10%: sampled HR@10 0.06 with 1-10 fillers, 0.08 with 20, none lost with 200).
- Adaptive shapes (issue 26: the attacker knows the defence). ``Poisoning.ones_range``
  = (low, high), the public validity range of ``dplcf-range``
  (:func:`~dprec.systems.dplcf.bit_screens.ones_range`): every attacker adds uniformly random
  other items up to ``low`` ones (``promote``: about 320 noise ones beside its 20 at
  eps = 1 on ML-100K) or clears random ones down to ``high`` (``untargeted``: all-ones
  thinned to ``high`` ones), each with its own draws. (Putting the ``high`` ones on the
  rarest items instead raised sampled HR@10 above the clean run on ML-100K: the rare
  negatives' neighbour lists fill with rare items no user holds.) ``Poisoning.screen`` = (z,
  threshold), ``dplcf-screen``'s itemset size and threshold: each attacker keeps each of its
  chosen items independently with probability rho = min(1, (threshold / (2 m))^(1/z)) (m
  attackers), so any z of them are held by about threshold / 2 attackers, under the screen.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from dprec.errors import DprecError
from dprec.protocol.poisoning import Attack, PoisonedClients, Poisoning
from dprec.systems.dplcf.messages import ObfuscatedBits

__all__ = ["BitUploadAttack", "attack_for", "into_range"]


def into_range(rows: np.ndarray, low: int, high: int, rng: np.random.Generator
               ) -> np.ndarray:
    """Each bool row with uniformly random zeros set until it has ``low`` ones, or random
    ones cleared until it has ``high`` (its own draws per row)."""
    ones = rows.sum(axis=1)
    keys = rng.random(rows.shape)
    add = np.where(rows, np.inf, keys)  # the zeros, in a random order
    rank_add = np.argsort(np.argsort(add, axis=1, kind="stable"), axis=1, kind="stable")
    rows = rows | (rank_add < np.maximum(low - ones, 0)[:, None])
    drop = np.where(rows, keys, np.inf)  # the ones, in a random order
    rank_drop = np.argsort(np.argsort(drop, axis=1, kind="stable"), axis=1, kind="stable")
    return rows & ~(rank_drop < np.maximum(rows.sum(axis=1) - high, 0)[:, None])


class BitUploadAttack(Attack):
    """The attack on DPLCF uploads (module docstring)."""

    def senders(self, message: Any, offset: int) -> tuple[np.ndarray, int]:
        if not isinstance(message, ObfuscatedBits):
            raise DprecError(f"DPLCF poisoning rewrites ObfuscatedBits uploads, got "
                             f"{type(message).__name__}")
        return np.arange(offset, offset + message.n_clients), offset + message.n_clients

    def rewrite(self, clients: PoisonedClients, messages: list[Any], masks: list[np.ndarray],
                broadcast: Any) -> list[Any]:
        rows = self._rows(clients, messages, masks)
        out: list[Any] = []
        start = 0
        for m, mask in zip(messages, masks, strict=True):
            if mask.any():
                n_bad = int(mask.sum())
                packed = m.packed.copy()
                packed[mask] = rows[start:start + n_bad]
                start += n_bad
                m = replace(m, packed=packed)  # validated again
                clients.replaced += n_bad
            out.append(m)
        return out

    @staticmethod
    def _rows(clients: PoisonedClients, messages: list[ObfuscatedBits],
              masks: list[np.ndarray]) -> np.ndarray:
        """The packed vectors of the attackers, in the order of the messages' rows."""
        n_items = messages[0].n_items
        n_bad = int(sum(int(mask.sum()) for mask in masks))
        pz = clients.poisoning
        dense = np.ones(n_items, bool)
        counts = np.zeros(n_items, np.int64)
        if pz.strategy == "promote":
            for m, mask in zip(messages, masks, strict=True):
                honest = m.packed[~mask]
                if len(honest):
                    counts += np.unpackbits(honest, axis=1, count=n_items).sum(
                        axis=0, dtype=np.int64)
        if pz.strategy == "promote":
            targets = clients.targets_for(n_items)
            dense[:] = False
            dense[targets] = True
            ranked = np.argsort(-counts, kind="stable")
            popular = ranked[~np.isin(ranked, targets)][:pz.fillers]
            dense[popular] = True
        if pz.ones_range is None and pz.screen is None:
            return np.tile(np.packbits(dense), (n_bad, 1))
        rows = np.tile(dense, (n_bad, 1))
        if pz.screen is not None:
            z, threshold = pz.screen
            rho = min(1.0, (threshold / (2.0 * max(n_bad, 1))) ** (1.0 / z))
            rows &= clients.rng.random(rows.shape) < rho
        if pz.ones_range is not None:
            rows = into_range(rows, *pz.ones_range, clients.rng)
        return np.packbits(rows, axis=1)


def attack_for(poisoning: Poisoning) -> tuple[BitUploadAttack, Poisoning]:
    """A DPLCF system's ``poisoning_attack``: the attack, ``poisoning`` as it is."""
    if poisoning.false_inputs:
        raise DprecError("false_inputs runs the binary mechanism: use fmf-ldp with "
                         "mechanism=binary")
    return BitUploadAttack(), poisoning
