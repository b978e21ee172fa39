"""Simulation batches: many clients' messages of one round, stacked for vectorised work.

A batch stands for ``n_clients`` individual wire messages and expands to them
(:meth:`ReportBatch.to_messages`); a test checks that the batch path and the per-client
message path give the proxy the same reports.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dprec.errors import DprecError
from dprec.protocol.messages import GradientReports, ValueReports

__all__ = ["ReportBatch"]


@dataclass(frozen=True)
class ReportBatch:
    """Row u of ``items``/``factors`` and of ``bits`` (one-bit reports) or ``values``
    (real-valued reports) is client ``client_ids[u]``'s message of k reports."""

    client_ids: np.ndarray
    items: np.ndarray
    factors: np.ndarray
    bits: np.ndarray | None = None
    values: np.ndarray | None = None

    def __post_init__(self) -> None:
        if (self.bits is None) == (self.values is None):
            raise DprecError("a report batch holds exactly one of bits or values")
        payload = self.bits if self.bits is not None else self.values
        shapes = {np.shape(self.items), np.shape(self.factors), np.shape(payload)}
        if len(shapes) != 1 or np.ndim(self.items) != 2:
            raise DprecError(f"items, factors and payload must be 2-D of one shape, got {shapes}")
        if np.shape(self.client_ids) != (np.shape(self.items)[0],):
            raise DprecError("client_ids must have one entry per row")

    @property
    def n_clients(self) -> int:
        return int(self.items.shape[0])

    def to_messages(self) -> list[GradientReports | ValueReports]:
        """The individual client messages this batch stands for."""
        if self.bits is not None:
            return [GradientReports(int(c), self.items[u], self.factors[u], self.bits[u])
                    for u, c in enumerate(self.client_ids)]
        assert self.values is not None
        return [ValueReports(int(c), self.items[u], self.factors[u], self.values[u])
                for u, c in enumerate(self.client_ids)]

    @classmethod
    def from_messages(cls, messages: list[GradientReports | ValueReports]) -> ReportBatch:
        """Stack client messages of equal k (the inverse of :meth:`to_messages`)."""
        if not messages:
            raise DprecError("a report batch needs at least one message")
        ids = np.array([m.client_id for m in messages], np.int64)
        items = np.stack([m.items for m in messages])
        factors = np.stack([m.factors for m in messages])
        if isinstance(messages[0], GradientReports):
            return cls(ids, items, factors, bits=np.stack([m.bits for m in messages]))
        return cls(ids, items, factors, values=np.stack([m.values for m in messages]))
