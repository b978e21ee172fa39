"""One privacy report for a run that fitted (and so released) one model per (seed, fold).

Each (seed, fold) fit is a separate simulated deployment whose data-dependent guarantee may
differ (a fold's largest profile, the neighbour lists it read, ...). The run's report must
hold for every one of them, so every reported number is the worst over the fits:

- a guarantee (a dict with ``epsilon`` and ``delta``, at any depth): the largest epsilon,
  the largest delta (null if any fit's is unknown) and the weakest sides (none < one <
  two); its mechanism and notes are those of the fit with the largest epsilon. A pair
  (eps_i, delta_i) implies (max eps, max delta), so the result holds for every fit.
- any other number that differs: its maximum (counts such as reads per user);
- any other differing field (text, lists such as the event summary): the fit with the
  largest per-user epsilon.

This bounds each released model, not their composition (the fits are separate runs).
A system whose privacy is data-independent gives equal reports, returned unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from dprec.errors import DprecError
from dprec.privacy.events import strict_json

__all__ = ["RULE", "guarantee_paths", "merge_fit_reports"]

RULE = (
    "every guarantee: the largest epsilon and the largest delta over the fitted models "
    "(one per seed and fold, each a separate deployment), with the weakest sides; any other "
    "differing number: its maximum; other differing fields: from the fit with the largest "
    "per-user epsilon. Guarantees that differ between fits, fit by fit: per_fit"
)
_SIDES_ORDER = {"none": 0, "one": 1, "two": 2}
_WORST_KEYS = (("levels", "user"), ("levels", "user_basic"), ("levels", "user_values"),
               ("levels", "user_values_basic"), ("levels", "event"), ("true",))

Fit = tuple[int, int]
"""(seed, fold index within the seed)."""


def _is_guarantee(value: object) -> bool:
    return isinstance(value, Mapping) and "epsilon" in value and "delta" in value


def _epsilon(value: object) -> float:
    """A JSON epsilon as a float ("inf" -> inf; anything unreadable -> -inf)."""
    if isinstance(value, bool):
        return -math.inf
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return -math.inf
    return -math.inf


def guarantee_paths(report: Mapping[str, Any], prefix: str = "") -> dict[str, Mapping[str, Any]]:
    """Every guarantee dict in ``report`` by its dotted path (dicts only, not lists)."""
    out: dict[str, Mapping[str, Any]] = {}
    for key, value in report.items():
        path = f"{prefix}{key}"
        if _is_guarantee(value):
            out[path] = value
        elif isinstance(value, Mapping):
            out.update(guarantee_paths(value, f"{path}."))
    return out


def _get(report: Mapping[str, Any], keys: Sequence[str]) -> object:
    node: object = report
    for k in keys:
        if not isinstance(node, Mapping) or k not in node:
            return None
        node = node[k]
    return node


def _worst_fit(reports: Sequence[Mapping[str, Any]]) -> int:
    """The fit with the largest per-user epsilon (ties: per-user basic, then the values-only
    per-user levels of the LDP rating systems, per event, true)."""

    def key(i: int) -> tuple[float, ...]:
        out = []
        for keys in _WORST_KEYS:
            g = _get(reports[i], keys)
            out.append(_epsilon(g.get("epsilon")) if isinstance(g, Mapping) else -math.inf)
        return tuple(out)

    return max(range(len(reports)), key=key)


def _merge_guarantee(values: Sequence[Mapping[str, Any]], fits: Sequence[Fit]) -> dict:
    eps = [_epsilon(v.get("epsilon")) for v in values]
    k = max(range(len(values)), key=lambda i: eps[i])
    out = dict(values[k])
    deltas = [v.get("delta") for v in values]
    if any(d is None for d in deltas):
        out["delta"] = None
        reason = next((v["delta_reason"] for v in values if "delta_reason" in v), None)
        if reason is not None:
            out["delta_reason"] = reason
    else:
        out["delta"] = max(float(d) for d in deltas)  # type: ignore[arg-type]
    sides = [str(v.get("sides", "two")) for v in values]
    out["sides"] = min(sides, key=lambda s: _SIDES_ORDER.get(s, 0))
    seed, fold = fits[k]
    out["notes"] = [*values[k].get("notes", []),
                    f"the largest over {len(values)} fitted models (seed x fold; this epsilon: "
                    f"seed {seed}, fold {fold}); per fit: privacy.per_fit"]
    return out


def _merge(values: Sequence[object], worst: int, fits: Sequence[Fit]) -> object:
    first = values[0]
    if all(v == first for v in values[1:]):
        return first
    if all(_is_guarantee(v) for v in values):
        return _merge_guarantee(values, fits)  # type: ignore[arg-type]
    if all(isinstance(v, Mapping) for v in values):
        keys = list(dict.fromkeys(k for v in values for k in v))  # type: ignore[union-attr]
        out = {}
        for key in keys:
            have = [i for i, v in enumerate(values) if key in v]  # type: ignore[operator]
            out[key] = _merge([values[i][key] for i in have],  # type: ignore[index]
                              have.index(worst) if worst in have else 0,
                              [fits[i] for i in have])
        return out
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return max(values)  # type: ignore[type-var]
    return values[worst]


def merge_fit_reports(reports: Sequence[Mapping[str, Any] | None],
                      fits: Sequence[Fit]) -> dict[str, Any] | None:
    """The privacy report of a run: the worst over its fits' ``reports`` (module docstring).

    ``fits[i]`` = (seed, fold) of ``reports[i]``. None when no fit has a report; one report
    is returned as it is. With several fits that differ, ``fits`` records the rule and
    ``per_fit`` each fit's (seed, fold) and its values (epsilon, delta, sides) of every
    guarantee that is not the same in all fits, by dotted path, in the order of
    ``per_seed``.
    """
    if len(reports) != len(fits):
        raise DprecError(f"{len(reports)} reports for {len(fits)} fits")
    present = [r for r in reports if r is not None]
    if not present:
        return None
    if len(present) != len(reports):
        missing = [fits[i] for i, r in enumerate(reports) if r is None]
        raise DprecError(f"fits {missing} (seed, fold) produced no privacy report while "
                         "others did")
    if len(present) == 1 or all(r == present[0] for r in present[1:]):
        return dict(present[0])
    worst = _worst_fit(present)
    merged = _merge(present, worst, fits)
    assert isinstance(merged, dict)
    seed, fold = fits[worst]
    merged["fits"] = {"count": len(present), "rule": RULE,
                      "largest_per_user": {"seed": seed, "fold": fold}}
    paths = [guarantee_paths(r) for r in present]
    varying = [p for p in dict.fromkeys(p for ps in paths for p in ps)
               if any(ps.get(p) != paths[0].get(p) for ps in paths[1:])]
    merged["per_fit"] = [
        {"seed": s, "fold": f,
         "guarantees": {p: {k: ps[p].get(k) for k in ("epsilon", "delta", "sides")}
                        for p in varying if p in ps}}
        for (s, f), ps in zip(fits, paths, strict=True)]
    return strict_json(merged)  # type: ignore[return-value]
