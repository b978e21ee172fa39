"""One neighbouring relation for guarantees accounted under different ones (issue 33 §5).

The secure-sum systems are accounted under zero-out (one user's contribution replaced by the
zero record ⊥, :attr:`Adjacency.ZERO_OUT`), the local-DP systems under replace-one (any
input of the user's randomiser against any other). Two sound conversions:

- **replace-one ⇒ zero-out, unchanged.** Let ⊥ stand, in the local model, for one fixed
  input x₀ of the randomiser (the empty history: "the user's data erased, the user still
  takes part", as a secure-sum device with no data still sends its noise share). Every
  zero-out pair (x, ⊥) is then the replace-one pair (x, x₀), so an (ε, δ) replace-one
  guarantee holds under zero-out with the same (ε, δ). It is an upper bound, possibly loose:
  zero-out compares x with x₀ only (for per-bit flips, only the bits where x has a 1).
- **zero-out (or add/remove) ⇒ replace-one: two steps.** x → x' is x → ⊥ → x' (remove then
  add), and chaining the two (ε, δ) inequalities,
  P[M(x) ∈ S] ≤ e^ε P[M(⊥) ∈ S] + δ ≤ e^ε (e^ε P[M(x') ∈ S] + δ) + δ,
  gives (2ε, (1 + e^ε) δ): group privacy for a group of two (Dwork and Roth, "The
  Algorithmic Foundations of Differential Privacy", 2014, Thm. 2.2 and §2.3; with the δ
  term kept exact rather than Vadhan's 2 e^ε δ, "The Complexity of Differential Privacy",
  2017, Lemma 2.2). It is tight for pure DP (the Laplace mechanism on contributions in
  [-1, 1]: sensitivity 1 against zero, 2 against any other).

Add/remove ⇒ zero-out is not converted: the two coincide for additive central noise (see
:class:`dprec.privacy.accountant.Accountant`) but not in general, so it is refused.
"""

from __future__ import annotations

import math

from dprec.errors import DprecError
from dprec.privacy.adjacency import Adjacency, as_adjacency

__all__ = ["on_relation", "replace_one_from_zero_out"]


def replace_one_from_zero_out(epsilon: float, delta: float) -> tuple[float, float]:
    """(2ε, (1 + e^ε) δ): an (ε, δ) guarantee under zero-out or add/remove, as a replace-one
    guarantee (two steps through ⊥; module docstring). δ may exceed 1 (then vacuous); it is
    returned as computed, never clipped, so a reader sees how far it is from useful."""
    eps, dlt = float(epsilon), float(delta)
    if not eps >= 0 or not 0 <= dlt <= 1:
        raise DprecError(f"need epsilon >= 0 and delta in [0, 1], got ({epsilon}, {delta})")
    if dlt == 0:
        return 2 * eps, 0.0
    return 2 * eps, (1 + math.exp(eps)) * dlt if eps < 700 else math.inf


def on_relation(epsilon: float, delta: float, source: Adjacency,
                target: Adjacency) -> tuple[float, float]:
    """The (ε, δ) of a guarantee accounted under ``source`` as a sound guarantee under
    ``target``: unchanged for the same relation and for replace-one ⇒ zero-out (⊥ stands for
    a fixed input of the randomiser), two steps (:func:`replace_one_from_zero_out`) for
    zero-out or add/remove ⇒ replace-one; any other pair raises."""
    source, target = as_adjacency(source), as_adjacency(target)
    if source == target or (source, target) == (Adjacency.REPLACE_ONE, Adjacency.ZERO_OUT):
        return float(epsilon), float(delta)
    if target == Adjacency.REPLACE_ONE:
        return replace_one_from_zero_out(epsilon, delta)
    raise DprecError(f"no sound conversion from {source.describe()} to {target.describe()} "
                     "in general; account the system under the target relation instead")
