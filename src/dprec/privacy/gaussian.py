"""Sampled Gaussian mechanism: eps by every accountant we support, and its inverse.

:func:`gaussian_rdp_epsilon` is dp-accounting's RDP accountant for the subsampled Gaussian
mechanism under a :class:`Sampling` scheme, each tied to its neighbouring relation: Poisson
sampling (add/remove-one, Mironov, Talwar, Zhang 2019) or fixed-size batches without
replacement (replace-one, Wang, Balle, Kasiviswanathan 2019); :func:`pld_poisson_epsilon` is
dp-accounting's PLD accountant under Poisson sampling; :func:`noise_multiplier_for` inverts
them (:func:`dprec.privacy.calibrate.smallest_noise`). DP-PrivRec's Table 3, reproduced with
them, is :mod:`dprec.systems.privrec.accounting`."""

from __future__ import annotations

import enum
import functools
import math
from collections.abc import Sequence
from fractions import Fraction

import dp_accounting
import numpy as np
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant

from dprec.errors import DprecError, check_positive
from dprec.privacy.adjacency import Adjacency
from dprec.privacy.calibrate import smallest_noise

__all__ = [
    "ADJACENCY",
    "PLD_INTERVAL",
    "Sampling",
    "gaussian_epsilons",
    "gaussian_rdp_epsilon",
    "noise_multiplier_for",
    "pld_poisson_epsilon",
]

def _check(noise_multiplier: float, sampling_rate: float, steps: int, delta: float, *,
           names: tuple[str, str] = ("noise multiplier", "sampling rate"),
           min_steps: int = 1) -> None:
    """The arguments of a subsampled-Gaussian analysis; ``names``: how the errors call the
    first two."""
    check_positive(names[0], noise_multiplier)
    if not 0 < sampling_rate <= 1:
        raise DprecError(f"{names[1]} must be in (0, 1], got {sampling_rate}")
    if isinstance(steps, bool) or int(steps) != steps or steps < min_steps:
        raise DprecError(f"steps must be an integer >= {min_steps}, got {steps}")
    if not 0 < delta < 1:
        raise DprecError(f"delta must be in (0, 1), got {delta}")


PLD_INTERVAL = 1e-4
"""Loss grid of the PLD accountant: 1e-3 overstated eps by up to 4% (0.1223 vs 0.1176 at
q = 5/4800, 1000 steps, delta = 1e-4); 1e-4 is within 0.05% of a 2e-5 grid."""

ADJACENCY: dict[str, Adjacency] = {
    "rdp_without_replacement": Adjacency.REPLACE_ONE,
    "rdp_poisson": Adjacency.ADD_REMOVE_ONE,
    "pld_poisson": Adjacency.ADD_REMOVE_ONE,
}
"""Neighbouring relation of each accountant's figure: fixed-size batches without replacement
are analysed under replace-one, Poisson sampling under add/remove-one. They are different
guarantees (a replacement is a removal then an addition), so every row says which it holds."""


class Sampling(enum.Enum):
    """How a step's batch is drawn; each scheme is analysed under its own adjacency."""

    POISSON = "poisson"
    """Each record joins the batch with probability ``q`` (add/remove-one)."""
    FIXED_SIZE = "fixed_size"
    """Exactly ``q N`` of the ``N`` records, drawn without replacement (replace-one)."""

    @property
    def adjacency(self) -> Adjacency:
        """The neighbouring relation this scheme's RDP bound holds under."""
        if self is Sampling.POISSON:
            return Adjacency.ADD_REMOVE_ONE
        return Adjacency.REPLACE_ONE


def _fixed_size_sizes(sample_rate: float, dataset_size: int | None) -> tuple[int, int]:
    if dataset_size is None:
        frac = Fraction(sample_rate).limit_denominator(10**6)
        if float(frac) != sample_rate:
            raise DprecError(
                "sample_rate must be a ratio of small integers for fixed-size sampling, "
                f"got {sample_rate}; pass dataset_size"
            )
        return frac.denominator, frac.numerator
    size = int(dataset_size)
    batch = int(round(sample_rate * size))
    if batch < 1 or abs(batch / size - sample_rate) > 1e-9:
        raise DprecError(
            f"sample_rate * dataset_size must be an integer >= 1, got {sample_rate} * {size}"
        )
    return size, batch


@functools.lru_cache(maxsize=64)
def _per_step_rdp(
    noise_multiplier: float,
    sampling: Sampling,
    sample_rate: float,
    sizes: tuple[int, int] | None,
    orders: tuple[float, ...] | None,
) -> tuple[np.ndarray, np.ndarray]:
    """(orders, RDP of one subsampled Gaussian step) from dp-accounting's RdpAccountant."""
    gaussian = dp_accounting.GaussianDpEvent(noise_multiplier)
    if sampling is Sampling.POISSON:
        event: dp_accounting.DpEvent = dp_accounting.PoissonSampledDpEvent(sample_rate, gaussian)
    else:
        assert sizes is not None
        event = dp_accounting.SampledWithoutReplacementDpEvent(sizes[0], sizes[1], gaussian)
    accountant = rdp_privacy_accountant.RdpAccountant(
        orders, sampling.adjacency.to_dp_accounting())
    accountant.compose(event)
    # dp-accounting has no public accessor for the composed RDP curve.
    order_arr = np.array(accountant._orders, dtype=float)
    rdp = np.array(accountant._rdp, dtype=float)
    order_arr.setflags(write=False)
    rdp.setflags(write=False)
    return order_arr, rdp


def gaussian_rdp_epsilon(
    noise_multiplier: float,
    sample_rate: float,
    steps: int,
    delta: float,
    sampling: Sampling = Sampling.POISSON,
    dataset_size: int | None = None,
    orders: Sequence[float] | None = None,
    conversion: str = "improved",
) -> float:
    """``eps`` at ``delta`` of ``steps`` subsampled Gaussian steps (dp-accounting RDP).

    ``noise_multiplier`` is the noise std divided by the l2 sensitivity under
    ``sampling.adjacency``. ``sampling``: :attr:`Sampling.POISSON` (add/remove-one, Mironov,
    Talwar, Zhang 2019) or :attr:`Sampling.FIXED_SIZE` (batches of exactly
    ``sample_rate * dataset_size`` records without replacement, replace-one, Wang, Balle,
    Kasiviswanathan 2019, Thm 27 strengthened for the Gaussian; ``dataset_size`` may be
    omitted when ``sample_rate`` is exactly a ratio of integers with denominator <= 10^6).

    ``conversion``: ``"improved"`` (dp-accounting's default, Canonne, Kamath, Steinke 2020,
    Prop. 12) or ``"classic"`` (``min_a steps * rdp(a) + log(1/delta)/(a - 1)``, Mironov
    2017, Prop. 3; what autodp-era papers such as DP-PrivRec report). The per-step RDP curve
    is cached, so evaluating several ``delta`` or ``steps`` is cheap.
    """
    _check(noise_multiplier, sample_rate, steps, delta,
           names=("noise_multiplier", "sample_rate"), min_steps=0)
    if not isinstance(sampling, Sampling):
        raise DprecError(f"sampling must be a Sampling ({', '.join(s.name for s in Sampling)}), "
                         f"got {sampling!r}")
    sizes = (_fixed_size_sizes(sample_rate, dataset_size)
             if sampling is Sampling.FIXED_SIZE else None)
    if conversion not in ("improved", "classic"):
        raise DprecError(f"conversion must be 'improved' or 'classic', got {conversion!r}")
    if steps == 0:
        return 0.0
    key_orders = None if orders is None else tuple(float(a) for a in orders)
    order_arr, rdp_one = _per_step_rdp(
        float(noise_multiplier), sampling, float(sample_rate), sizes, key_orders
    )
    rdp = int(steps) * rdp_one
    if conversion == "improved":
        eps, _ = rdp_privacy_accountant.compute_epsilon(order_arr, rdp, delta)
        return float(eps)
    keep = order_arr > 1
    return float(np.min(rdp[keep] + math.log(1.0 / delta) / (order_arr[keep] - 1.0)))


@functools.lru_cache(maxsize=64)
def _poisson_accountant(noise_multiplier: float, sampling_rate: float, steps: int,
                        interval: float) -> pld_privacy_accountant.PLDAccountant:
    """The composed PLD accountant, shared by every delta asked of it."""
    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=interval)
    event = dp_accounting.PoissonSampledDpEvent(
        sampling_rate, dp_accounting.GaussianDpEvent(noise_multiplier))
    acc.compose(event, int(steps))
    return acc


def pld_poisson_epsilon(noise_multiplier: float, sampling_rate: float, steps: int,
                        delta: float, value_discretization_interval: float = PLD_INTERVAL
                        ) -> float:
    """eps of ``steps`` Poisson-sampled Gaussian steps by dp-accounting's PLD accountant
    (add/remove-one adjacency; pessimistic rounding to ``value_discretization_interval``)."""
    _check(noise_multiplier, sampling_rate, steps, delta)
    check_positive("value_discretization_interval", value_discretization_interval)
    acc = _poisson_accountant(float(noise_multiplier), float(sampling_rate), int(steps),
                              float(value_discretization_interval))
    return float(acc.get_epsilon(delta))


def gaussian_epsilons(noise_multiplier: float, sampling_rate: float, steps: int,
                      delta: float, dataset_size: int | None = None) -> dict[str, float]:
    """eps at ``delta`` by each accountant: RDP (Poisson, add/remove-one; fixed-size without
    replacement, replace-one) with the improved conversion, and PLD (Poisson, add/remove-one);
    :data:`ADJACENCY` labels each key."""
    _check(noise_multiplier, sampling_rate, steps, delta)
    out = {
        "rdp_poisson": gaussian_rdp_epsilon(noise_multiplier, sampling_rate, steps, delta),
        "pld_poisson": pld_poisson_epsilon(noise_multiplier, sampling_rate, int(steps), delta),
    }
    try:
        out["rdp_without_replacement"] = gaussian_rdp_epsilon(
            noise_multiplier, sampling_rate, steps, delta, Sampling.FIXED_SIZE,
            dataset_size=dataset_size)
    except DprecError:
        out["rdp_without_replacement"] = math.nan  # q is not a ratio of small integers
    return out


def noise_multiplier_for(target_epsilon: float, sampling_rate: float, steps: int,
                         delta: float, accountant: str = "rdp_poisson",
                         rtol: float = 1e-6) -> float:
    """The smallest noise multiplier (to relative tolerance ``rtol``, rounded up) whose eps by
    ``accountant`` (a key of :data:`ADJACENCY`) is <= the target
    (:func:`dprec.privacy.calibrate.smallest_noise`)."""
    check_positive("target epsilon", target_epsilon)
    _check(1.0, sampling_rate, steps, delta)

    def eps(z: float) -> float:  # only the accountant asked for: the PLD one is slow
        if accountant == "pld_poisson":
            return pld_poisson_epsilon(z, sampling_rate, int(steps), delta)
        if accountant == "rdp_poisson":
            return gaussian_rdp_epsilon(z, sampling_rate, steps, delta)
        return gaussian_rdp_epsilon(z, sampling_rate, steps, delta, Sampling.FIXED_SIZE)

    if accountant not in ADJACENCY:
        raise DprecError(f"accountant must be one of {', '.join(ADJACENCY)}, got {accountant!r}")
    return smallest_noise(eps, target_epsilon, rtol=rtol, lower=1e-2, upper=1e4,
                          what="noise multiplier")
