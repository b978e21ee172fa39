"""Renyi-DP composition (dp-accounting's RDP accountant, improved RDP-to-DP conversion,
Canonne, Kamath, Steinke 2020) of (subsampled) Gaussian and Skellam events."""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

import dp_accounting
import numpy as np

from dprec.errors import DprecError
from dprec.privacy.accountant import Accountant, Composition, DpEvent
from dprec.privacy.adjacency import Adjacency, as_adjacency
from dprec.privacy.skellam import SKELLAM_ORDERS, SkellamDpEvent, skellam_rdp

__all__ = ["RdpAccountant"]


class RdpAccountant(Accountant):
    """Renyi-DP composition of (subsampled) Gaussian events (dp-accounting's RDP accountant).

    ``adjacency``: :attr:`Adjacency.REPLACE_ONE` (fixed-size batches without replacement,
    ``SampledWithoutReplacementDpEvent``; sensitivity measured under replacement),
    :attr:`Adjacency.ADD_REMOVE_ONE` (Poisson sampling, ``PoissonSampledDpEvent``) or
    :attr:`Adjacency.ZERO_OUT` (Poisson sampling too: dp-accounting's ``REPLACE_SPECIAL``,
    the same curve as add/remove); a string is refused. An event that needs another relation
    raises :class:`~dprec.privacy.accountant.UnsupportedEventError`. Epsilon uses the improved
    conversion (dp-accounting's default); all supported events are two-sided.

    :class:`~dprec.privacy.skellam.SkellamDpEvent` (the Skellam mechanism, AKL21 Thm 3.5,
    sensitivities under this accountant's relation) is composed on the integer orders
    :data:`~dprec.privacy.skellam.SKELLAM_ORDERS`, where its bound holds; a composition
    without one keeps dp-accounting's default orders.
    """

    name: ClassVar[str] = "rdp"

    def __init__(self, adjacency: Adjacency = Adjacency.REPLACE_ONE) -> None:
        self.adjacency = as_adjacency(adjacency)

    def _supports_leaf(self, event: DpEvent) -> bool:
        if isinstance(event, dp_accounting.GaussianDpEvent | dp_accounting.NoOpDpEvent
                      | SkellamDpEvent):
            return True
        if isinstance(event, dp_accounting.SampledWithoutReplacementDpEvent):
            return (self.adjacency is Adjacency.REPLACE_ONE
                    and isinstance(event.event, dp_accounting.GaussianDpEvent))
        if isinstance(event, dp_accounting.PoissonSampledDpEvent):
            return (self.adjacency in (Adjacency.ADD_REMOVE_ONE, Adjacency.ZERO_OUT)
                    and isinstance(event.event, dp_accounting.GaussianDpEvent))
        return False

    def compose(self, events: Iterable[tuple[DpEvent, int]], delta: float) -> Composition:
        """Epsilon at ``delta`` of the RDP composition (improved conversion)."""
        from dp_accounting.rdp import rdp_privacy_accountant

        if not 0 < delta < 1:
            raise DprecError(f"delta must be in (0, 1), got {delta}")
        leaves = {e: c for e, c in self._leaves(events).items() if c > 0}
        if not leaves:
            return Composition(0.0, 0.0, "two", ("no events: eps = 0",))
        skellam = {e: c for e, c in leaves.items() if isinstance(e, SkellamDpEvent)}
        orders = SKELLAM_ORDERS if skellam else None
        acc = rdp_privacy_accountant.RdpAccountant(
            orders=orders, neighboring_relation=self.adjacency.to_dp_accounting())
        for event, count in leaves.items():
            if event not in skellam:
                acc.compose(event, int(count))
        notes = [f"RDP composition (dp-accounting, {self.adjacency.value} adjacency, improved "
                 "RDP-to-DP conversion)"]
        if not skellam:
            return Composition(float(acc.get_epsilon(delta)), delta, "two", tuple(notes))
        # dp-accounting has no Skellam event: its curve is added to the accountant's own
        # (composition of RDP curves is their sum), then converted the same way
        rdp = np.asarray(acc._rdp, dtype=np.float64).copy()
        for event, count in skellam.items():
            rdp += int(count) * skellam_rdp(event, orders)
        eps, _ = rdp_privacy_accountant.compute_epsilon(np.asarray(orders, float), rdp, delta)
        notes.append("Skellam RDP bound of Agarwal, Kairouz, Liu (NeurIPS 2021, Thm 3.5) on "
                     "integer orders 2..4096")
        return Composition(float(eps), delta, "two", tuple(notes))
