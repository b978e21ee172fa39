"""``dprec privacy table|gaussian``: a published accountant table beside its reproduction,
and the sampled Gaussian mechanism's ε by every accountant."""

from __future__ import annotations

import json
import math
import sys
from typing import Annotated

import typer
from rich.table import Table

from dprec.cli.common import fail, out
from dprec.errors import DprecError

__all__ = ["privacy_app", "privacy_gaussian", "privacy_table", "register"]

privacy_app = typer.Typer(help="Privacy accounting tables and calculators.", no_args_is_help=True)


@privacy_app.command("table")
def privacy_table(
    name: Annotated[str, typer.Argument(help="Which published table: privrec.")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON list on stdout.")] = False,
) -> None:
    """A published accountant table beside our reproduction and the correct accounting."""
    from dprec.systems.privrec.accounting import privrec_table
    if name != "privrec":
        fail(DprecError(f"unknown table {name!r}; known: privrec"))
    rows = privrec_table()
    if as_json:
        sys.stdout.write(json.dumps(rows) + "\n")
        return
    t = Table(title="DP-PrivRec Table 3 (z = 1, 1000 rounds, N = 4,800): eps")
    for col in ("q", "delta", "paper (replace-one)",
                "reproduced (1000 x M steps, classic; replace-one)",
                "correct: RDP without replacement (replace-one)",
                "PLD, Poisson sampling (add/remove-one)"):
        t.add_column(col, justify="right")
    for r in rows:
        t.add_row(f"{round(r['q'] * 4800)}/4800", f"{r['delta']:.0e}", f"{r['paper']:.4f}",
                  f"{r['reproduced']:.4f}", f"{r['rdp_without_replacement']:.4f}",
                  f"{r['pld_poisson']:.4f}")
    out.print(t)
    out.print("The paper composes the Gaussian step 1000 x M times (over-counting by M); "
              "Algorithm 2 runs 1000 fixed-size batches drawn without replacement.")
    from dprec.privacy.gaussian import Sampling, gaussian_rdp_epsilon
    from dprec.systems.privrec.accounting import privrec_effective_noise
    z_eff = privrec_effective_noise(1.0, 0.7)
    eps = [gaussian_rdp_epsilon(z_eff, m / 4800, 1000, 1e-6, Sampling.FIXED_SIZE,
                                dataset_size=4800) for m in (5, 30)]
    out.print(f"Both queries as implemented (h = 0.7; the clip indicator's replace-one "
              f"sensitivity is 1/M, not the 2/M its sigma_b assumes): effective z = "
              f"{z_eff:.3f} instead of 1, eps at delta 1e-6 = {eps[0]:.4f} (M = 5) and "
              f"{eps[1]:.4f} (M = 30), RDP without replacement.")


@privacy_app.command("gaussian")
def privacy_gaussian(
    noise_multiplier: Annotated[float | None, typer.Option(help="Noise std / sensitivity.")
                                ] = None,
    sampling_rate: Annotated[float, typer.Option(help="Sampling rate q in (0, 1].")] = 0.01,
    steps: Annotated[int, typer.Option(help="Number of steps.")] = 1000,
    delta: Annotated[float, typer.Option(help="Target delta.")] = 1e-6,
    target_epsilon: Annotated[float | None, typer.Option(
        help="Instead: the noise multiplier that reaches this eps (RDP, Poisson).")] = None,
) -> None:
    """eps of the sampled Gaussian mechanism by every accountant, or the noise for an eps."""
    from dprec.privacy.gaussian import gaussian_epsilons, noise_multiplier_for
    try:
        if (noise_multiplier is None) == (target_epsilon is None):
            raise DprecError("give exactly one of --noise-multiplier and --target-epsilon")
        if target_epsilon is not None:
            z = noise_multiplier_for(target_epsilon, sampling_rate, steps, delta)
            out.print(f"noise multiplier {z:.4f} reaches eps <= {target_epsilon:g} at "
                      f"delta={delta:g} (RDP, Poisson sampling, q={sampling_rate:g}, "
                      f"{steps} steps)")
            return
        assert noise_multiplier is not None
        eps = gaussian_epsilons(noise_multiplier, sampling_rate, steps, delta)
    except DprecError as e:
        fail(e)
    t = Table(title=f"sampled Gaussian: z={noise_multiplier:g}, q={sampling_rate:g}, "
                    f"{steps} steps, delta={delta:g}")
    from dprec.privacy.gaussian import ADJACENCY
    t.add_column("accountant")
    t.add_column("adjacency")
    t.add_column("eps", justify="right")
    for k, v in eps.items():
        t.add_row(k, ADJACENCY[k].value, "n/a" if math.isnan(v) else f"{v:.4f}")
    out.print(t)


def register(app: typer.Typer) -> None:
    """Add ``dprec privacy`` to ``app``."""
    app.add_typer(privacy_app, name="privacy")
