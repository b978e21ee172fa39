"""A model's frozen config, given or defaulted, in one place.

``class FunkSVD(Configured[FunkSVDConfig], config=FunkSVDConfig)`` makes ``FunkSVD()`` hold
``FunkSVDConfig()`` (the defaults) and ``FunkSVD(cfg)`` hold ``cfg``; configs validate
themselves at construction.
"""

from __future__ import annotations

from typing import Any, ClassVar, Generic, TypeVar

__all__ = ["Configured"]

C = TypeVar("C")


class Configured(Generic[C]):
    """Holds ``config``: the one given, or ``config_type()`` for None."""

    config_type: ClassVar[type]
    """The config dataclass, named in the class statement (``config=...``)."""
    config: C

    def __init_subclass__(cls, *, config: type | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if config is not None:
            cls.config_type = config

    def __init__(self, config: C | None = None) -> None:
        self.config = config if config is not None else self.config_type()
