"""dp-pop's and ldp-pop's frozen configs and their validation, importable by a device without
the systems' in-process or server code (the published protocol carries dp-pop's:
:class:`~dprec.systems.deployable.ProtocolInfo`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from dprec.errors import DprecError

__all__ = ["DpPopConfig", "LdpPopConfig", "Sampling"]

Sampling = Literal["uniform", "recency"]


@dataclass(frozen=True)
class DpPopConfig:
    """Settings of dp-pop."""

    epsilon: float = 1.0
    """Target per-user epsilon of the one release (zero-out adjacency for secure, add/remove
    one user for trusted: :func:`adjacency_of`)."""
    delta: float = 1e-6
    """Target delta."""
    k: int = 50
    """Most items a user contributes (L1 sensitivity k, L2 sqrt(k)); 50 did best on ML-100K
    at eps 1 among 20, 50, 100, 200 (sampled HR@10 .282, .302, .297, .281; 5 seeds)."""
    sampling: Sampling = "uniform"
    """Which k items: uniform at random, or the k most recent (needs timestamps)."""
    aggregation: Literal["secure", "trusted"] = "secure"
    """secure: every client adds a Skellam share, the exact sum is released; trusted: a
    central curator adds one Skellam draw."""
    min_honest: int | None = None
    """secure: the guarantee holds for at least this many honest contributing clients
    (default: all clients); shares are Sk(mu / min_honest). The proxy releases a round only
    once this many clients contributed."""
    n_clients: int | None = None
    """The clients enrolled (they fix each share and q); None: the training rows. A server
    started as a service needs it."""
    validity: Literal["prio3", "none"] = "prio3"
    """aggregation=secure. ``prio3`` (the default): every client's share is truncated
    (:mod:`dprec.systems.dp_pop.draws`) and over the services every upload carries a Prio3
    proof that it is a k-hot vector plus such a share, verified jointly by the proxy and
    the server; in process, the proof's own predicate
    (:func:`~dprec.protocol.secure_sum.vdaf.contribution.dp_pop_check`: each count in
    [-T, 1 + T], the sum in [-S, k + S], the L2 bound) is applied to each plaintext vector.
    Either way an invalid contribution is refused with its reason and the round releases the
    rest (docs/secure_sum.md, "Validity proofs"). ``none`` sums every vector, the damage a
    malicious client does unchecked (any value mod q on every coordinate)."""

    def __post_init__(self) -> None:
        if not (self.epsilon > 0 and math.isfinite(self.epsilon)):
            raise DprecError(f"epsilon must be finite and > 0, got {self.epsilon}")
        if not 0 < self.delta < 1:
            raise DprecError(f"delta must be in (0, 1), got {self.delta}")
        if self.validity not in ("prio3", "none"):
            raise DprecError(f"validity must be 'prio3' or 'none', got {self.validity!r}")
        if isinstance(self.k, bool) or int(self.k) != self.k or self.k < 1:
            raise DprecError(f"k must be an integer >= 1, got {self.k!r}")
        if self.sampling not in ("uniform", "recency"):
            raise DprecError(f"sampling must be 'uniform' or 'recency', got {self.sampling!r}")
        if self.aggregation not in ("secure", "trusted"):
            raise DprecError(f"aggregation must be 'secure' or 'trusted', "
                             f"got {self.aggregation!r}")
        m = self.min_honest
        if m is not None and (isinstance(m, bool) or int(m) != m or m < 1):
            raise DprecError(f"min_honest must be an integer >= 1, got {m!r}")
        if m is not None and self.aggregation == "trusted":
            raise DprecError("min_honest applies to aggregation=secure only")
        c = self.n_clients
        if c is not None and (isinstance(c, bool) or int(c) != c or c < 1):
            raise DprecError(f"n_clients must be an integer >= 1, got {c!r}")
        if c is not None and m is not None and m > c:
            raise DprecError(f"min_honest ({m}) must be <= n_clients ({c})")



@dataclass(frozen=True)
class LdpPopConfig:
    """Settings of ldp-pop."""

    epsilon: float = 1.0
    """Per-user epsilon of the one OUE report (replace one user's data)."""
    pad: int = 1
    """Padding length l of padding-and-sampling (public)."""

    def __post_init__(self) -> None:
        if not (self.epsilon > 0 and math.isfinite(self.epsilon)):
            raise DprecError(f"epsilon must be finite and > 0, got {self.epsilon}")
        if isinstance(self.pad, bool) or int(self.pad) != self.pad or self.pad < 1:
            raise DprecError(f"pad must be an integer >= 1, got {self.pad!r}")
