"""A registered system's entry: name, config class, factory, task, privacy, grids, presets.

Kept apart from the registry so that modules registering systems (``SPECS`` lists) can import
it without importing the registry itself.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from dprec.systems.audits import SystemAudit
from dprec.systems.base import Recommender, Task

__all__ = ["NoConfig", "SystemSpec"]


@dataclass(frozen=True)
class NoConfig:
    """This system has no settings."""


@dataclass(frozen=True)
class SystemSpec:
    """A registered system.

    ``fixed``: config fields set by the system's name (not settable). ``default_grid``: the
    grid ``dprec tune`` searches when no grid file is given (widened until the chosen point
    is inside it on ML-100K).
    """

    name: str
    config: type
    factory: Callable[[str, Any], Recommender]
    task: Task
    private: bool
    summary: str
    fixed: Mapping[str, object] = field(default_factory=dict)
    default_grid: Mapping[str, tuple[object, ...]] = field(default_factory=dict)
    paper: Mapping[str, object] = field(default_factory=dict)
    """Settings that differ from the default config in the paper's own setting
    (``--preset paper``); empty when the default is the paper's."""
    protocol: str = "default"
    """The evaluation protocol the system is built for: "default" (the task's own: leave-one-
    out ranking, k-fold rating) or "user-split" (PrivRec's: user split, fine-tune half on
    the device, every held-out positive against all never-interacted items)."""
    deploy: str | None = None
    """The package of a system that runs as services (``dprec.systems.dplcf``): its
    ``deploy`` module holds the device-safe descriptor ``DEPLOYMENT`` and its ``serve``
    module the server half ``SERVING`` (:mod:`dprec.systems.deployable` imports each only
    when asked, so a device loads no server code). None: the system runs in process only."""
    extras: tuple[str, ...] = ()
    """Optional packages the system needs to be built (``torch``): what
    :meth:`missing_extra` checks without importing them."""
    audit: SystemAudit | None = None
    """How ``dprec audit NAME`` audits the system (:mod:`dprec.systems.audits`); None: it
    cannot be audited."""

    def settable(self) -> list[str]:
        return [f.name for f in fields(self.config) if f.name not in self.fixed]

    def default_config(self) -> Any:
        return self.config(**self.fixed)

    def paper_config(self) -> Any:
        """The default config with the paper's own settings applied."""
        return replace(self.default_config(), **self.paper)

    def missing_extra(self) -> str | None:
        """The first of :attr:`extras` that is not installed or cannot be found (None: all
        are); nothing is imported."""
        return next((m for m in self.extras if not _findable(m)), None)

    def build(self, config: Any | None = None) -> Recommender:
        """A fresh, unfitted system with ``config`` (default: the paper's settings)."""
        return self.factory(self.name, config if config is not None else self.default_config())


def _findable(module: str) -> bool:
    """Whether ``module`` can be found (``find_spec`` may raise for a broken or blocked one)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
