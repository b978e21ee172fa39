"""Validity proofs for secure-sum contributions: Prio3 (draft-irtf-cfrg-vdaf-20) with the
FLP of Boneh, Boyle, Corrigan-Gibbs, Gilboa, Ishai (CRYPTO 2019), vectorised.

dprec's proxy is Prio3's Helper (it already receives a seed: exactly a Helper's input
share) and dprec's server is the Leader. Modules, one job each: :mod:`.field` (Field64 on
numba kernels, Field128 exact), :mod:`.xof` (XofTurboShake128), :mod:`.polynomial` (NTT and
evaluation on roots of unity), :mod:`.gadgets`, :mod:`.flp` (prove / query / decide),
:mod:`.circuits` (the spec's Count, Sum, SumVec, Histogram, MultihotCountVec),
:mod:`.prio3` (sharding and preparation), :mod:`.spec_instances` (the spec's Prio3
instances), :mod:`.dprec_circuits` and :mod:`.contribution` (dprec's own checks and the API
the protocol calls), :mod:`.noise_bounds` (the truncated Skellam share and its cost).
"""
