"""Secure summation with two non-colluding parties (issue 23 §1): each client splits its
clipped, quantised, noised vector ``v`` into a mask seed sealed to the proxy and
``s = v - r mod q`` sealed to the server, in one upload; the proxy releases one shuffled batch
of the ``s`` with the sum of the masks; the server learns only ``sum v``.

Why not split-and-mix (Ishai, Kushilevitz, Ostrovsky, Sahai, FOCS 2006; Balle, Bell, Gascon,
Nissim, arXiv 1909.11225): its ``m = O(1 + sigma / log n)`` messages (12 for 32-bit scalars,
``n = 10^4``, ``sigma = 40``) are for a SCALAR in ``Z_q``. A d-vector sent as ``m`` vector
messages lives in ``Z_q^d``: any ``m``-subset holding part of one user's shares sums to a
uniform vector, so it looks like a valid (e.g. k-hot) contribution with probability about
``q^-d``, and unless ``C(n m, m) >= q^d / |valid|`` the server links each user's shares. At
``d = 1,682`` that needs ``m`` of about 1,300 to 1,800 (4 to 6 MB per client); shuffling each
coordinate apart needs ``n m d = 2e8`` sealed boxes per round. Two additive shares to the two
non-colluding parties the threat model already has cost one upload of ``d ceil(b/8) + 172``
bytes. docs/secure_sum.md gives the numbers, the threat model and the measured cost.

Modules, one job each: :mod:`.params` (q, gamma, m and the no-wrap bound), :mod:`.sealed`
(the HPKE-style sealed box), :mod:`.ring` (masks and encoding in ``Z_{2^b}^d``),
:mod:`.messages` (upload and release records), :mod:`.client`, :mod:`.proxy` and
:mod:`.server` (the three roles' steps), :mod:`.errors`, :mod:`.noise_shares` (the clients'
Skellam noise shares, for any range of clients), :mod:`.in_process` (the simulation's
proxy: one exact sum per round, at ``min_honest``) and :mod:`.curator` (the trusted curator
of ``aggregation=trusted``: the central noise on that exact sum); :mod:`.vdaf` (validity
proofs for the contributions: Prio3, draft-irtf-cfrg-vdaf; not yet wired into the round
flow). The package imports no role module,
so a client importing it never reaches the proxy's or the server's code.
"""

from dprec.protocol.secure_sum.params import SecureSumParams, choose_params, noise_tail_bound

__all__ = ["SecureSumParams", "choose_params", "noise_tail_bound"]
