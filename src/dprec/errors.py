"""Errors that tell the user what to do."""

__all__ = ["DataError", "DprecError", "check_positive"]


class DprecError(ValueError):
    """Bad input: the message names the parameter, the rule and the value."""


class DataError(DprecError):
    """A data set is missing, unknown or corrupt."""


def check_positive(name: str, value: float) -> float:
    """Raise ``DprecError`` unless ``value > 0``."""
    if not value > 0:
        raise DprecError(f"{name} must be > 0, got {value}")
    return value
