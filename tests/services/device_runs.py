"""What a simulation over the services with device clients shares with the in-process one:
the secure-sum systems' clients draw their noise and sampling from their own CSPRNG over
HTTP, so the numbers differ from the seeded in-process run; the structure does not."""

from __future__ import annotations

import math
from typing import Any


def _shape(doc: Any) -> Any:
    """``doc`` with every number replaced by its kind (finite or not): its structure."""
    if isinstance(doc, dict):
        return {k: _shape(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_shape(v) for v in doc]
    if isinstance(doc, bool) or doc is None or isinstance(doc, str):
        return type(doc).__name__
    if isinstance(doc, (int, float)):
        return "finite" if math.isfinite(doc) else "nan"
    return type(doc).__name__


def same_structure(inproc: dict[str, Any], http: dict[str, Any],
                   timings: frozenset[str] = frozenset({"seconds_by_role"})) -> None:
    """The two result documents have the same metrics, per-seed entries and diagnostics:
    the same keys and lists, a number where the other has one (finite where it is finite),
    whatever the draws."""
    for key in ("metrics", "per_seed"):
        assert _shape(inproc[key]) == _shape(http[key]), key
    strip = [[{k: v for k, v in d.items() if k not in timings} for d in doc["diagnostics"]]
             for doc in (inproc, http)]
    assert [set(d) for d in strip[0]] == [set(d) for d in strip[1]]
