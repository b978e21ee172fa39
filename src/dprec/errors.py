"""Errors that tell the user what to do, and the parameter checks that raise them."""

import math

import numpy as np

__all__ = [
    "DataError", "DprecError", "NotFittedError", "check_int", "check_positive", "check_real",
]


class DprecError(ValueError):
    """Bad input: the message names the parameter, the rule and the value."""


class DataError(DprecError):
    """A data set is missing, unknown or corrupt."""


class NotFittedError(DprecError):
    """A model or system asked to score or predict before ``fit``: the message names it and
    says to call ``fit`` first."""


def check_positive(name: str, value: float) -> float:
    """Raise ``DprecError`` unless ``value > 0``."""
    if not value > 0:
        raise DprecError(f"{name} must be > 0, got {value}")
    return value


def check_int(name: str, value: object, minimum: int) -> None:
    """Raise ``DprecError`` unless ``value`` is an integer (not a bool) ``>= minimum``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise DprecError(f"{name} must be an integer >= {minimum}, got {value!r}")


def check_real(name: str, value: object, *, low: float = -math.inf, low_open: bool = False,
               high: float = math.inf, high_open: bool = False) -> None:
    """Raise ``DprecError`` unless ``value`` is a finite real number (not a bool) in the
    interval from ``low`` to ``high``, each end open or closed as told."""
    ok = (not isinstance(value, bool) and isinstance(value, int | float | np.integer
                                                     | np.floating) and math.isfinite(value))
    if ok:
        ok = (value > low if low_open else value >= low) and (
            value < high if high_open else value <= high)
    if not ok:
        lo = "" if low == -math.inf else f"{'>' if low_open else '>='} {low:g}"
        hi = "" if high == math.inf else f"{'<' if high_open else '<='} {high:g}"
        rule = " and ".join(r for r in (lo, hi) if r) or "any value"
        raise DprecError(f"{name} must be a finite number {rule}, got {value!r}")
