"""Per-cell bias of the robust aggregators on synthetic FMF-LDP cells (issue 26 §3).

One FMF-LDP cell as the server sees it: n_c ~ Poisson(lam) reports (lam = n k / (N F), 11.2
on ML-100K with k = 100, F = 5), each the binary mechanism's +-C output for the honest
clipped gradient entry x (E[y] = x). For each x and each aggregator, the mean over --cells
independent cells of (cell total / n_c) estimates E[estimate], so ``bias`` = that - x (the
plain mean is unbiased). ``shift`` adds attackers: a fraction --attack of each cell's
reports replaced by -C (the attack's side), and reports E[estimate | attacked] - E[estimate]:
the poisoning's shift of the cell mean. The plain mean's expected shift is -a (C + x) for an
attacked fraction a of the reports (Cheu-Smith-Ullman-style worst case for values in
[-C, C]). Prints a Markdown table.

  .venv/bin/python experiments/robust_aggregation_bias.py [--epsilon 2.5] [--lam 11.2]
      [--cells 20000] [--attack 0.05] [--seed 0]
"""

from __future__ import annotations

import argparse

import numpy as np

from dprec.mechanisms.numeric import BinaryMechanism
from dprec.protocol.aggregation import make_aggregator
from dprec.systems.fmf.defences import FMF_AGGREGATORS

AGGREGATORS = ("mean", "trimmed:0.1", "trimmed:0.2", "median-of-means:3",
               "median-of-means:5")
XS = (-1.0, -0.5, -0.1, 0.0, 0.1, 0.5, 1.0)


def cells_of(x: float, lam: float, n_cells: int, attack: float, mech: BinaryMechanism,
             rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(cells, values, counts): honest +-C reports of x; a fraction ``attack`` set to -C."""
    counts = rng.poisson(lam, n_cells)
    cells = np.repeat(np.arange(n_cells), counts)
    bits = mech.sample_bits(np.full(cells.size, x), rng)
    values = np.asarray(mech.estimate(bits), np.float64)
    if attack:
        values[rng.random(cells.size) < attack] = -mech.scale
    return cells, values, counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epsilon", type=float, default=2.5)
    ap.add_argument("--lam", type=float, default=11.2)
    ap.add_argument("--cells", type=int, default=20000)
    ap.add_argument("--attack", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    mech = BinaryMechanism(args.epsilon)
    print(f"binary mechanism eps={args.epsilon} (C = {mech.scale:.4f}), Poisson({args.lam}) "
          f"reports per cell, {args.cells} cells per x; attacked fraction {args.attack}\n")
    print("| x | " + " | ".join(f"{a} bias / shift" for a in AGGREGATORS) + " |")
    print("|---|" + "---|" * len(AGGREGATORS))
    for x in XS:
        row = []
        rng = np.random.default_rng([args.seed, int(1000 * (x + 2))])
        clean = cells_of(x, args.lam, args.cells, 0.0, mech, rng)
        hit = cells_of(x, args.lam, args.cells, args.attack, mech, rng)
        for name in AGGREGATORS:
            agg = make_aggregator(name, FMF_AGGREGATORS)
            est = []
            for cells, values, counts in (clean, hit):
                total = agg.cell_totals(cells, values, args.cells)
                used = counts > 0
                est.append(float(np.mean(total[used] / counts[used])))
            row.append(f"{est[0] - x:+.4f} / {est[1] - est[0]:+.4f}")
        print(f"| {x:+.1f} | " + " | ".join(row) + " |")
    print(f"\nplain mean's expected shift -a (C + x): a = {args.attack}, "
          f"C = {mech.scale:.4f}: from {-args.attack * (mech.scale - 1):+.4f} (x = -1) to "
          f"{-args.attack * (mech.scale + 1):+.4f} (x = +1)")


if __name__ == "__main__":
    main()
