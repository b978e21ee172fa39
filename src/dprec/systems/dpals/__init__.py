"""dpals: DPALS and AdaDPALS (Chien et al., ICML 2021; Krichene et al., ICML 2023) on
secure summation with distributed Skellam noise (issue 24 §1).

Modules, one job each: :mod:`.statistics` (the layout of a contribution and randomised
rounding), :mod:`.accounting` (sensitivities, the scale gamma, noise calibration),
:mod:`.client` (the user's step), :mod:`.simulation` (the rounds through the engine: the
secure sum's release, or a trusted curator's), :mod:`.server` (the item solve), :mod:`.system`
(the report),
:mod:`.specs` (the registry entry).
"""

__all__: list[str] = []
