"""The neighbouring relation an accountant analyses, as an object (after dp-accounting's
``NeighboringRelation``), never a free string.

- :attr:`Adjacency.REPLACE_ONE`: neighbouring inputs differ in one unit's data replaced (the
  population size is public). The local model's events (one user's report of any input vs any
  other) and fixed-size batches drawn without replacement are analysed under it; a sum of
  ``M`` clipped updates of norm ``<= S`` then has sensitivity ``2S`` (DP-PrivRec's ``2S/M``
  on the mean) and a count of bits sensitivity 1.
- :attr:`Adjacency.ADD_REMOVE_ONE`: neighbouring inputs differ in one unit present or absent
  (Poisson sampling); a sum of clipped updates has sensitivity ``S``.
- :attr:`Adjacency.ZERO_OUT`: neighbouring inputs differ in one unit's contribution replaced
  by the zero vector, every other part of the computation unchanged (Kairouz, Liu, Steinke,
  ICML 2021, Def. 1.1; Kairouz et al., ICML 2021, "Practical and Private (Deep) Learning
  without Sampling or Shuffling"; dp-accounting's ``REPLACE_SPECIAL``). The relation of a
  secure sum with distributed noise: each enrolled device sends its noise share whatever its
  data, so both neighbouring sums carry the same noise, ``sum_v x_v + Z`` vs
  ``sum_{v != u} x_v + Z``, as in add/remove with central noise. A sum of clipped updates has
  sensitivity ``S`` (``||x_u - 0|| <= S``), so an additive-noise release (Gaussian, Laplace,
  Skellam) has the same privacy loss as under add/remove. Under add/remove the absent
  user's share would leave the sum too (``Sk(a + s) + x_u`` vs ``Sk(a)``: different noise on
  the two sides), which the equal-noise bounds do not cover.
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
    ZERO_OUT = "zero_out"

    def to_dp_accounting(self) -> dp_accounting.NeighboringRelation:
        """dp-accounting's ``NeighboringRelation`` for the same relation (zero-out is its
        ``REPLACE_SPECIAL``: a record replaced by the special zero record)."""
        nr = dp_accounting.NeighboringRelation
        return {Adjacency.REPLACE_ONE: nr.REPLACE_ONE,
                Adjacency.ADD_REMOVE_ONE: nr.ADD_OR_REMOVE_ONE,
                Adjacency.ZERO_OUT: nr.REPLACE_SPECIAL}[self]

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
