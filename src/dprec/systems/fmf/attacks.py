"""FMF-LDP's poisoning attack (:mod:`dprec.protocol.poisoning`): attackers send worst-case
valid reports (:class:`~dprec.protocol.batches.ReportBatch`, k (item, factor, value) reports
per client, its row's sender in ``client_ids``).

- ``untargeted`` (preference reversal): each attacker keeps its own k uniformly drawn
  (item, factor) slots, so its reports land where an honest client's would, and gives each
  the extreme output of the mechanism (bit 1/0 = +-C for the binary mechanism, +-scale for
  the piecewise one, +-1 without noise) with the sign -sign(l_i) sign(d_f). d_f is the
  sign of the honest reports' total over all items in factor f: the honest item gradient
  c (p - x.v) x is dominated by the items users hold, so d points along the users'
  vectors. l_i is item i's honest total projected on d: how strongly the users pull v_i
  toward themselves (its popularity as the server sees it). Liked items are pushed away
  from the users and the others toward them, which reverses the model's ranking. (Reversing
  each cell's own honest sign is weaker: at a per-report eps, the sign of the ~10 honest
  reports in one cell is mostly noise. On ML-100K at 10% it cost 0.05 HR@10, this 0.10.)
- ``promote``: all k reports on the (target item, factor) cells, spread evenly over them,
  each at the extreme with the sign of d_f, the honest reports' total over all items in
  factor f: the honest item gradient c (p - x.v) x is dominated by the positive items and
  so points along the users' vectors; pushing the targets' v_t along it raises x_u . v_t
  for most users.
- ``promote`` with assigned cells (``Poisoning.fixed_cells``, FMF-LDP ``cells=assigned``:
  the proxy ignores a message whose cells are not the sender's,
  :mod:`dprec.systems.fmf.cells`): each attacker keeps the k cells it was assigned and can
  only choose their values: the extreme with the sign of d_f on the cells of a target item,
  with the opposite sign on every other cell (pushing the other items away from the users
  raises the targets' rank too). Nearly all its damage comes from that second half, which
  needs no choice of cells: the target half alone (a target cell is about k T / N of an
  attacker's k cells) barely moves sampled HR@10 on ML-100K.
- ``false_inputs`` (binary mechanism): the same signs, but each bit drawn from the mechanism
  on the false input x' = sign, so the attacker is, report by report, an honest client with
  gradient +-1: the attack no aggregator can tell apart (issue 26 §3's measured floor,
  docs/results/poisoning_defences_fmf.md).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from dprec.errors import DprecError
from dprec.mechanisms.numeric import BinaryMechanism
from dprec.protocol.batches import ReportBatch
from dprec.protocol.poisoning import Attack, PoisonedClients, Poisoning

__all__ = ["ReportAttack", "attack_for"]


class ReportAttack(Attack):
    """The attack on FMF-LDP's report batches (module docstring)."""

    def senders(self, message: Any, offset: int) -> tuple[np.ndarray, int]:
        if not isinstance(message, ReportBatch):
            raise DprecError(f"FMF-LDP poisoning rewrites report batches, got "
                             f"{type(message).__name__}")
        return np.asarray(message.client_ids, np.int64), offset

    def rewrite(self, clients: PoisonedClients, messages: list[Any], masks: list[np.ndarray],
                broadcast: Any) -> list[Any]:
        V = np.asarray(broadcast, np.float64)
        if V.ndim != 2:
            raise DprecError("FMF-LDP poisoning needs the broadcast item matrix V")
        n_items, n_factors = V.shape
        bits = messages[0].bits is not None
        if not bits and clients.poisoning.value_bound is None:
            raise DprecError("real-valued reports need Poisoning.value_bound (the largest "
                             "|value| the mechanism outputs)")
        extreme = 1.0 if bits else float(clients.poisoning.value_bound)  # type: ignore[arg-type]
        # the honest reports' signed total per (item, factor) cell this round
        totals = np.zeros(n_items * n_factors)
        for m, mask in zip(messages, masks, strict=True):
            keep = ~mask
            cells = (m.items[keep].astype(np.int64) * n_factors + m.factors[keep]).ravel()
            signed = (2.0 * m.bits[keep] - 1.0 if bits else m.values[keep]).ravel()
            totals += np.bincount(cells, weights=signed, minlength=totals.size)
        out = []
        for m, mask in zip(messages, masks, strict=True):
            if not mask.any():
                out.append(m)
                continue
            items, factors = m.items.copy(), m.factors.copy()
            n_bad, k = int(mask.sum()), m.items.shape[1]
            if clients.poisoning.strategy == "untargeted":
                grid = totals.reshape(n_items, n_factors)
                direction = np.sign(grid.sum(axis=0))
                direction[direction == 0] = 1.0
                liked = np.sign(grid @ direction)
                liked[liked == 0] = 1.0
                sign = -liked[items[mask]] * direction[factors[mask]]
            elif clients.poisoning.fixed_cells:
                direction = np.sign(totals.reshape(n_items, n_factors).sum(axis=0))
                direction[direction == 0] = 1.0
                on_target = np.isin(items[mask], clients.targets_for(n_items))
                sign = np.where(on_target, 1.0, -1.0) * direction[factors[mask]]
            else:
                targets = clients.targets_for(n_items)
                slot = np.arange(n_bad * k).reshape(n_bad, k)
                t_items = targets[slot % len(targets)]
                t_factors = (slot // len(targets)) % n_factors
                items[mask] = t_items.astype(items.dtype)
                factors[mask] = t_factors.astype(factors.dtype)
                direction = np.sign(totals.reshape(n_items, n_factors).sum(axis=0))
                direction[direction == 0] = 1.0
                sign = direction[t_factors]
            clients.replaced += n_bad
            if bits:
                new = m.bits.copy()
                if clients.poisoning.false_inputs:
                    c = float(clients.poisoning.value_bound)  # type: ignore[arg-type]
                    new[mask] = clients.rng.random(sign.shape) < 0.5 * (1.0 + sign / c)
                else:
                    new[mask] = (sign > 0).astype(new.dtype)
                out.append(ReportBatch(m.client_ids, items, factors, bits=new))
            else:
                new = np.array(m.values, np.float64, copy=True)
                new[mask] = sign * extreme
                out.append(ReportBatch(m.client_ids, items, factors,
                                       values=new.astype(m.values.dtype, copy=False)))
        return out


def attack_for(config: Any, poisoning: Poisoning) -> tuple[ReportAttack, Poisoning]:
    """An FMF-LDP system's ``poisoning_attack``: the attack, and ``poisoning`` completed from
    ``config``: the real-valued reports' bound (the descriptor's
    :meth:`~dprec.systems.fmf.deploy.FmfDeployment.value_bound`) unless given,
    :attr:`Poisoning.fixed_cells` with ``cells=assigned``, and with ``false_inputs`` the
    binary mechanism's C."""
    from dprec.systems.fmf.deploy import DEPLOYMENT

    if poisoning.value_bound is None:
        poisoning = replace(poisoning, value_bound=DEPLOYMENT.value_bound(config))
    if config.cells == "assigned":
        poisoning = replace(poisoning, fixed_cells=True)
    if poisoning.false_inputs:
        if config.mechanism != "binary":
            raise DprecError("false_inputs runs the binary mechanism: use fmf-ldp with "
                             "mechanism=binary")
        poisoning = replace(poisoning, value_bound=BinaryMechanism(config.epsilon).scale)
    return ReportAttack(), poisoning
