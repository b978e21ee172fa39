"""The neighbouring relation an accountant analyses, as an object (after dp-accounting's
``NeighboringRelation``), never a free string.

- :attr:`Adjacency.REPLACE_ONE`: neighbouring inputs differ in one unit's data replaced (the
  population size is public). The local model's events (one user's report of any input vs any
  other) and fixed-size batches drawn without replacement are analysed under it; a sum of
  ``M`` clipped updates of norm ``<= S`` then has sensitivity ``2S`` (DP-PrivRec's ``2S/M``
  on the mean) and a count of bits sensitivity 1.
- :attr:`Adjacency.ADD_REMOVE_ONE`: neighbouring inputs differ in one unit present or absent
  (Poisson sampling); a sum of clipped updates has sensitivity ``S``.
"""

from __future__ import annotations

import enum

import dp_accounting

from dprec.errors import InvalidParameterError

__all__ = ["Adjacency", "as_adjacency"]


class Adjacency(enum.Enum):
    """What two neighbouring inputs differ in."""

    REPLACE_ONE = "replace_one"
    ADD_REMOVE_ONE = "add_remove_one"

    def to_dp_accounting(self) -> dp_accounting.NeighboringRelation:
        """dp-accounting's ``NeighboringRelation`` for the same relation."""
        if self is Adjacency.REPLACE_ONE:
            return dp_accounting.NeighboringRelation.REPLACE_ONE
        return dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE

    def describe(self) -> str:
        """Short text for reports, e.g. ``replace-one adjacency``."""
        return f"{self.value.replace('_', '-')} adjacency"


def as_adjacency(value: object) -> Adjacency:
    """``value`` if it is an :class:`Adjacency`; anything else (a string included) raises."""
    if not isinstance(value, Adjacency):
        raise InvalidParameterError(
            f"adjacency must be an Adjacency ({', '.join(a.name for a in Adjacency)}), "
            f"got {value!r}"
        )
    return value
