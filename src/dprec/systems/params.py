"""Settings of a system as the command line and the services give them: ``--param
KEY=VALUE`` pairs, ``--epsilon``, an ε grid and a ``--config`` TOML file, checked here once
for every command (``run``, ``compare``, ``tune``, ``simulate``, ``serve server``).

ε is validated in one place, :func:`check_epsilon`: a number > 0 (NaN refused; the
system's config then applies its own bounds, e.g. FMF-LDP's ε <= 50 per report).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dprec.errors import InvalidParameterError, PrivacyParameterError
from dprec.systems.registry import ConfigFile, make_config, read_config, spec

__all__ = ["check_epsilon", "config_from_file", "epsilon_grid", "param_pairs", "system_params"]


def check_epsilon(value: float, name: str = "epsilon") -> float:
    """``value`` if it is an ε: a number > 0 (NaN is not); else a
    :class:`~dprec.errors.PrivacyParameterError` naming ``name``."""
    if not value > 0:
        raise PrivacyParameterError(f"{name} must be > 0, got {value}")
    return value


def epsilon_grid(text: str, option: str = "--eps-grid") -> list[float]:
    """Comma-separated ε values (empty items skipped), each checked by :func:`check_epsilon`."""
    grid = []
    for x in text.split(","):
        if not x.strip():
            continue
        try:
            grid.append(float(x))
        except ValueError:
            raise InvalidParameterError(f"{option} must hold numbers, got {x.strip()!r}") from None
    return [check_epsilon(e, f"every ε in {option}") for e in grid]


def param_pairs(params: Iterable[str] | None) -> dict[str, str]:
    """``--param KEY=VALUE`` options as a dict (the last of a repeated key wins)."""
    found: dict[str, str] = {}
    for p in params or []:
        key, sep, value = p.partition("=")
        if not sep or not key.strip():
            raise InvalidParameterError(f"--param must look like KEY=VALUE, got {p!r}")
        found[key.strip()] = value.strip()
    return found


def system_params(name: str, epsilon: float | None, params: dict[str, object]) -> dict:
    """``params`` with ``--epsilon`` set as the system's ``epsilon`` (the registry checks the
    keys when the config is made); an error for a system without an ``epsilon``."""
    found: dict[str, object] = dict(params)
    if epsilon is not None:
        check_epsilon(epsilon)
        s = spec(name)
        if "epsilon" not in s.settable():
            budget = [k for k in s.settable() if k.startswith("eps")]
            raise InvalidParameterError(f"{name} has no epsilon; set " + " and ".join(
                f"--param {k}=..." for k in budget) if budget and s.private else
                f"{name} is not private: it has no epsilon (drop --epsilon)")
        found["epsilon"] = epsilon
    return found


def config_from_file(path: Path | None, system: str) -> tuple[Any, ConfigFile | None]:
    """The config in the TOML file ``path`` for ``system`` and the file; (None, None)
    without a file. A file written for another system is an error."""
    if path is None:
        return None, None
    cf = read_config(path)
    if cf.system != system:
        raise InvalidParameterError(f"config file {path} is for {cf.system}, not {system}")
    return make_config(system, cf.params), cf
