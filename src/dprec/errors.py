"""Errors that tell the user what to do, and the parameter checks that raise them.

Every error is a :class:`DprecError`, itself a ``ValueError`` (callers that catch
``ValueError`` keep working); the subclasses say what went wrong:

- :class:`InvalidParameterError`: a parameter or setting breaks its rule (range, type,
  format); :class:`PrivacyParameterError` for epsilon, delta and the like;
- :class:`DataError`: a data set is missing, unknown or corrupt; :class:`UnknownDatasetError`
  (also an :class:`UnknownNameError`) for a name no registry knows;
- :class:`UnknownNameError`: a name that its registry does not hold;
- :class:`NotFittedError`: a model used before ``fit``.

Elsewhere, next to what raises them: ``dprec.privacy.ledger.BudgetExceededError``,
``dprec.privacy.accountant.UnsupportedEventError``, ``dprec.protocol.messages.MessageError``,
``dprec.systems.base.UnknownUserError``.
"""

import math

import numpy as np

__all__ = [
    "DataError", "DprecError", "InvalidParameterError", "NotFittedError",
    "PrivacyParameterError", "UnknownDatasetError", "UnknownNameError", "as_float", "check_int",
    "check_positive", "check_real",
]


class DprecError(ValueError):
    """Bad input: the message names the parameter, the rule and the value."""


class InvalidParameterError(DprecError):
    """A parameter or setting breaks its rule: the message names it, the rule and the value
    (``epsilon must be > 0, got -1``)."""


class PrivacyParameterError(InvalidParameterError):
    """A privacy parameter (an epsilon, a delta) outside the range it must lie in."""


class UnknownNameError(DprecError):
    """A name (a data set, a system, a preset) that its registry does not hold; the message
    lists the known ones."""


class DataError(DprecError):
    """A data set is missing, unknown or corrupt."""


class UnknownDatasetError(DataError, UnknownNameError):
    """A data-set name that the data registry does not know."""


class NotFittedError(DprecError):
    """A model or system asked to score or predict before ``fit``: the message names it and
    says to call ``fit`` first."""


def as_float(value: object, message: str, error: type[DprecError] = InvalidParameterError,
             *, finite: bool = False) -> float:
    """``float(value)``; ``error(message)`` when ``value`` is a bool or something float()
    refuses, and (``finite``) when the number is NaN or infinite."""
    if isinstance(value, bool):
        raise error(message)
    try:
        out = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise error(message) from None
    if finite and not math.isfinite(out):
        raise error(message)
    return out


def check_positive(name: str, value: float) -> float:
    """Raise :class:`InvalidParameterError` unless ``value > 0``."""
    if not value > 0:
        raise InvalidParameterError(f"{name} must be > 0, got {value}")
    return value


def check_int(name: str, value: object, minimum: int) -> None:
    """Raise :class:`InvalidParameterError` unless ``value`` is an integer (not a bool)
    ``>= minimum``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise InvalidParameterError(f"{name} must be an integer >= {minimum}, got {value!r}")


def check_real(name: str, value: object, *, low: float = -math.inf, low_open: bool = False,
               high: float = math.inf, high_open: bool = False) -> None:
    """Raise :class:`InvalidParameterError` unless ``value`` is a finite real number (not a
    bool) in the interval from ``low`` to ``high``, each end open or closed as told."""
    ok = (not isinstance(value, bool) and isinstance(value, int | float | np.integer
                                                     | np.floating) and math.isfinite(value))
    if ok:
        ok = (value > low if low_open else value >= low) and (
            value < high if high_open else value <= high)
    if not ok:
        lo = "" if low == -math.inf else f"{'>' if low_open else '>='} {low:g}"
        hi = "" if high == math.inf else f"{'<' if high_open else '<='} {high:g}"
        rule = " and ".join(r for r in (lo, hi) if r) or "any value"
        raise InvalidParameterError(f"{name} must be a finite number {rule}, got {value!r}")
