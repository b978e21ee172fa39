"""The parameters of one secure sum: the bit width ``b`` of the modulus ``q = 2^b``, the scale
``gamma``, the clip, the number of shares, and the noise tail that ``b`` must leave room for.

The sum must never wrap. A client clips ``x`` (``||x||_inf <= c`` or ``||x||_2 <= c``; either
way every coordinate has ``|x_j| <= c``), quantises ``gamma * x`` by unbiased randomised
rounding (each coordinate then lies in ``[-ceil(gamma c), ceil(gamma c)]``) and adds its
integer noise share. Over ``n`` honest clients each coordinate of the integer sum satisfies

    |S_j| <= B = n * ceil(gamma * c) + T_sigma

where ``T_sigma`` bounds the summed noise on all ``d`` coordinates at once except with
probability ``2^-sigma`` (:func:`noise_tail_bound`). The server lifts the sum mod ``q`` to its
centred representative in ``(-q/2, q/2]``, which is exact when ``B <= q/2 - 1``; the smallest
such width is

    b = 1 + bitlen(B)    (so that 2^(b-1) >= B + 1).

The number of shares is ``m = 2`` (one additive share to the proxy, one to the server: the
two non-colluding parties of the threat model); docs/secure_sum.md says why not the ``m``
messages of split-and-mix (Ishai, Kushilevitz, Ostrovsky, Sahai, FOCS 2006; Balle, Bell,
Gascon, Nissim, arXiv 1909.11225).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

from dprec.errors import check_int, check_real
from dprec.privacy.events import strict_json
from dprec.protocol.secure_sum.errors import SecureSumError

__all__ = ["MAX_BITS", "SecureSumParams", "choose_params", "noise_tail_bound"]

MAX_BITS = 63
"""Widest modulus: the centred sum must fit a signed 64-bit integer."""

FORMULA = ("b = 1 + bitlen(B), B = n*ceil(gamma*c) + T_sigma, T_sigma = L/3 + sqrt(L^2/9 + "
           "2*L*V), L = ln(2d) + sigma*ln 2 (Bernstein, union bound over d coordinates)")


def noise_tail_bound(variance: float, dimension: int, sigma: int = 40) -> int:
    """The smallest integer ``T`` with ``P(max_j |N_j| > T) <= 2^-sigma`` for a noise sum ``N``
    in ``Z^d`` whose coordinates each have variance ``variance``.

    Bernstein's inequality, ``P(|N_j| >= t) <= 2 exp(-t^2 / (2 (V + t/3)))``, holds for any
    sum of independent centred variables bounded by 1 in magnitude and for their limits:
    Poisson, hence Skellam (Agarwal, Kairouz, Liu, NeurIPS 2021), and binomial noise. It also
    bounds a ``V``-sub-Gaussian sum such as the distributed discrete Gaussian (Kairouz, Liu,
    Steinke, ICML 2021), whose tail ``2 exp(-t^2 / 2V)`` is smaller. A union bound over the
    ``d`` coordinates and ``2 d exp(-t^2 / (2 (V + t/3))) = 2^-sigma`` give
    ``t = L/3 + sqrt(L^2/9 + 2 L V)`` with ``L = ln(2d) + sigma ln 2``.
    """
    check_real("variance", variance, low=0.0)
    check_int("dimension", dimension, 1)
    check_int("sigma", sigma, 1)
    if variance == 0:
        return 0
    log_terms = math.log(2 * dimension) + sigma * math.log(2)
    t = log_terms / 3 + math.sqrt(log_terms ** 2 / 9 + 2 * log_terms * variance)
    return math.ceil(t)


@dataclasses.dataclass(frozen=True)
class SecureSumParams:
    """Everything the client, proxy and server of a round agree on; public."""

    dimension: int
    """``d``: coordinates per contribution."""
    expected_clients: int
    """``n``: the most clients whose sum must not wrap."""
    clip: float
    """``c``: the clip bound, in the norm :attr:`norm`."""
    norm: Literal["l2", "linf"]
    """The norm the client clips in (``"l2"`` scales ``x`` down, ``"linf"`` clips each
    coordinate)."""
    gamma: float
    """The quantisation scale: the client sends ``round(gamma * x)``."""
    noise_variance: float
    """Variance of one coordinate of the summed noise (all clients' shares together)."""
    noise_tail: int
    """``T_sigma``: bound on the summed noise on every coordinate, except w.p. ``2^-sigma``."""
    sigma: int
    """Statistical security parameter: the sum wraps with probability at most ``2^-sigma``."""
    bound: int
    """``B = n * ceil(gamma * c) + T_sigma``: the largest ``|S_j|`` the round provides for."""
    bits: int
    """``b``: the modulus is ``q = 2^b``."""
    shares: int = 2
    """``m``: additive shares per client (proxy and server)."""
    formula: str = FORMULA
    """How :attr:`bits` was chosen."""

    @property
    def modulus(self) -> int:
        """``q = 2^b``."""
        return 1 << self.bits

    @property
    def element_bytes(self) -> int:
        """Bytes per coordinate on the wire: ``ceil(b / 8)``."""
        return (self.bits + 7) // 8

    @property
    def share_bytes(self) -> int:
        """Bytes of one server share in the clear: ``d * ceil(b / 8)``."""
        return self.dimension * self.element_bytes

    @property
    def client_bound(self) -> int:
        """``ceil(gamma * c)``: the largest ``|coordinate|`` of a quantised, clipped vector."""
        return math.ceil(self.gamma * self.clip)

    def to_json(self) -> dict[str, object]:
        """Every choice, with the modulus and the formula (strict JSON)."""
        out = dataclasses.asdict(self)
        out.update(modulus=self.modulus, element_bytes=self.element_bytes,
                   client_bound=self.client_bound)
        return strict_json(out)  # type: ignore[return-value]


def choose_params(*, dimension: int, expected_clients: int, clip: float, gamma: float,
                  norm: Literal["l2", "linf"] = "linf", noise_variance: float = 0.0,
                  sigma: int = 40) -> SecureSumParams:
    """The narrowest modulus ``q = 2^b`` whose centred sum of ``expected_clients`` clipped,
    quantised, noised contributions never wraps (but w.p. ``2^-sigma``): module docstring."""
    check_int("dimension", dimension, 1)
    check_int("expected_clients", expected_clients, 1)
    check_real("clip", clip, low=0.0, low_open=True)
    check_real("gamma", gamma, low=0.0, low_open=True)
    if norm not in ("l2", "linf"):
        raise SecureSumError(f"norm must be 'l2' or 'linf', got {norm!r}")
    tail = noise_tail_bound(noise_variance, dimension, sigma)
    bound = expected_clients * math.ceil(gamma * clip) + tail
    bits = 1 + bound.bit_length()
    if bits > MAX_BITS:
        raise SecureSumError(
            f"the sum needs a {bits}-bit modulus (bound {bound}), more than {MAX_BITS}: "
            "lower gamma, the clip, the noise or the number of clients")
    return SecureSumParams(dimension=dimension, expected_clients=expected_clients, clip=clip,
                           norm=norm, gamma=gamma, noise_variance=float(noise_variance),
                           noise_tail=tail, sigma=sigma, bound=bound, bits=bits)
