"""``dprec audit``: empirical lower bounds on epsilon (thin wrapper over :mod:`dprec.audit`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from dprec.cli.common import err, fail, out
from dprec.errors import DprecError

__all__ = ["ALL_TABLE", "VIOLATION_EXIT", "register", "run_table"]

VIOLATION_EXIT = 1
"""Exit status of an audit whose lower bound lies above the claimed eps (``--all``: only
for violations the analysis does not predict); 2 is a usage error."""

ALL_TABLE = (
    ("bitflip-sp", None, {}), ("bitflip-ap", None, {}), ("bitflip-oue", None, {}),
    ("oue-replace", None, {}), ("binary", None, {}), ("piecewise", None, {}),
    ("laplace", None, {}), ("laplace-rr", None, {}), ("gaussian", None, {}),
    ("skellam", None, {"mu": "10", "delta": "1e-3"}),
    ("shuffle-binary", None, {"n_users": "100"}), ("shuffle-binary", None, {"n_users": "943"}),
    ("dplcf-user", None, {}),
    ("dp-privrec-canaries", None, {"rounds": "100", "clients_per_round": "100",
                                   "local_epochs": "2", "noise_multiplier": "0.5"}),
)
"""What ``dprec audit --all`` runs: every mechanism at eps = 1 (shuffle: eps0 = 2.5), the
shuffled slot at n = 100 and 943, Skellam at mu = 10 (delta 1e-3), DPLCF at user level
(N = 1682) and the DP-PrivRec one-run audit on ML-100K (100 rounds, 100 of N clients per
round, 2 local epochs, z = 0.5)."""


def register(app: typer.Typer) -> None:
    """Add ``dprec audit`` to ``app``."""

    @app.command("audit")
    def audit_cmd(
        name: Annotated[str | None, typer.Argument(
            help="A mechanism or protocol (see --list) or a system, e.g. dplcf-sp.")] = None,
        epsilon: Annotated[float | None, typer.Option(
            help="The mechanism's or system's epsilon (default 1; shuffle-binary 2.5).")] = None,
        param: Annotated[list[str] | None, typer.Option(
            "--param", help="KEY=VALUE: audit options (--list) or the system's config keys.")
        ] = None,
        level: Annotated[str | None, typer.Option(
            help="event or user (default: event; dp-privrec: user).")] = None,
        trials: Annotated[int, typer.Option(help="Outputs per input (one-run: ignored).")
                          ] = 1_000_000,
        alpha: Annotated[float, typer.Option(
            help="Confidence 1 - alpha (Clopper-Pearson; one-run: beta).")] = 0.01,
        seed: Annotated[int, typer.Option(help="Seed of the audit.")] = 0,
        as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")
                           ] = False,
        list_: Annotated[bool, typer.Option("--list", help="List mechanisms and protocols.")
                         ] = False,
        all_: Annotated[bool, typer.Option(
            "--all", help="Run the full table (every mechanism and protocol) into --out.")
        ] = False,
        out_dir: Annotated[Path, typer.Option(
            "--out", help="Where --all writes audit.json, audit.md and audit.png.")
        ] = Path("results/audit"),
    ) -> None:
        """Audit a mechanism, protocol or system: a lower bound on eps from its outputs."""
        from dprec.systems.params import param_pairs
        try:
            from dprec.audit import AuditSettings, audit, auditable_systems, targets
            if list_:
                for t in targets().values():
                    opts = f" [--param {', '.join(t.params)}]" if t.params else ""
                    out.print(f"{t.name:22s} {t.kind:9s} {t.level:5s} {t.summary}{opts}")
                out.print("systems: " + ", ".join(auditable_systems()))
                return
            settings = AuditSettings(trials=trials, alpha=alpha, seed=seed)
            if all_:
                results = run_table(settings, out_dir, progress=lambda s: err.print(s))
                for r in results:
                    out.print(_line(r.to_json()))
                out.print(f"wrote {out_dir}/audit.json, audit.md, audit.png")
                for r in results:
                    if r.violates_claim:
                        err.print(r.violation_message())
                if any(r.violates_claim and not r.violation_expected for r in results):
                    raise typer.Exit(VIOLATION_EXIT)
                return
            if name is None:
                raise DprecError("name a mechanism, protocol or system (or --list, --all)")
            result = audit(name, epsilon=epsilon, params=param_pairs(param),
                           level=level, settings=settings)  # type: ignore[arg-type]
        except DprecError as e:
            fail(e)
            return
        doc = result.to_json()
        if as_json:
            print(json.dumps(doc, indent=2))
        else:
            out.print(_line(doc))
            for note in result.notes:
                out.print(f"  note: {note}")
            for k, v in result.directions.items():
                out.print(f"  {k}: empirical {v['empirical_lower']:.4g} "
                          f"(true {v['true_epsilon']})")
        if result.violates_claim:
            err.print(f"[bold red]{result.violation_message()}[/bold red]")
            raise typer.Exit(VIOLATION_EXIT)


def _line(doc: dict) -> str:
    def f(v: object) -> str:
        if v is None:
            return "—"
        return "∞" if v == "inf" else f"{float(v):.4g}"  # type: ignore[arg-type]
    return (f"{doc['name']} ({doc['level']}): claimed {f(doc['claimed_epsilon'])}, "
            f"true {f(doc['true_epsilon'])}, empirical >= {doc['empirical_lower']:.4g} "
            f"at confidence {doc['confidence']:g} ({doc['trials']:,} trials, "
            f"delta {doc['delta']:g})"
            + (" — VIOLATES THE CLAIM" if doc.get("violates_claim") else ""))


def run_table(settings: object, out_dir: Path, progress=None) -> list:
    """Run :data:`ALL_TABLE` and write audit.json, audit.md and audit.png into ``out_dir``."""
    from dataclasses import replace

    from dprec import __version__
    from dprec.audit import audit
    from dprec.audit.report import audit_markdown, plot_audit
    results = []
    for name, eps, params in ALL_TABLE:
        if progress is not None:
            progress(f"audit {name} {params or ''}")
        s = settings
        if name == "dp-privrec-canaries":
            s = replace(settings, alpha=max(settings.alpha, 0.05))  # type: ignore[type-var]
        results.append(audit(name, epsilon=eps, params=params, settings=s))  # type: ignore
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    doc = {"version": __version__, "trials": settings.trials,  # type: ignore[attr-defined]
           "alpha": settings.alpha, "seed": settings.seed,  # type: ignore[attr-defined]
           "results": [r.to_json() for r in results]}
    (out_dir / "audit.json").write_text(json.dumps(doc, indent=2, allow_nan=False) + "\n")
    (out_dir / "audit.md").write_text(
        f"# dprec audit: {settings.trials:,} trials per input, "  # type: ignore[attr-defined]
        f"confidence {1 - settings.alpha:g} (one-run: 0.95)\n\n"  # type: ignore[attr-defined]
        + audit_markdown(results))
    plot_audit(results, out_dir / "audit.png")
    return results

