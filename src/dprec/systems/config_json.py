"""A system's frozen config on the wire: the JSON object of its fields, decoded strictly.

A published protocol description (:class:`~dprec.systems.deployable.ProtocolInfo`) carries
the system's typed frozen config. :func:`config_to_json` gives its fields in declaration
order (what ``dataclasses.asdict`` gives a flat config: the wire bytes do not change);
:func:`config_from_json` builds the config class back from a received object and refuses
(:class:`DprecError`) a key the class does not have, a field the object lacks and a value
whose JSON type is not the field's (a bool for a number, a string for an integer, a value
outside a ``Literal``), before the class's own validation runs. Values are kept as
received (an integer for a float field stays an integer), so a decoded description
re-encodes to the same bytes. The server is untrusted (docs/architecture.md, "hostile
input").
:func:`recorded_config` reads back the config a finished run recorded in its results file
(``parameters``: the same fields; a field the record lacks takes its default).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from functools import cache
from typing import Any

from dprec.errors import DprecError

__all__ = ["config_from_json", "config_to_json", "field_kinds", "recorded_config"]

_SCALARS: dict[Any, str] = {int: "an integer", float: "a number", bool: "true or false",
                             str: "a string"}


def config_to_json(config: Any) -> dict[str, Any]:
    """The fields of the frozen config ``config`` as a JSON object, in declaration order."""
    if not is_dataclass(config) or isinstance(config, type):
        raise DprecError(f"a config must be a dataclass instance, got {type(config).__name__}")
    return {f.name: getattr(config, f.name) for f in fields(config)}


@cache
def field_kinds(cls: type) -> dict[str, tuple[tuple[str, ...], tuple[Any, ...] | None, bool]]:
    """Per field of the config class ``cls``: (the JSON kinds it takes, the values of a
    ``Literal`` or None, whether None is allowed). :class:`DprecError` for a field of a
    type a JSON object cannot carry (a config that cannot be published)."""
    hints = typing.get_type_hints(cls)
    out = {}
    for f in fields(cls):
        kinds: list[str] = []
        allowed: list[Any] | None = None
        optional = False
        for arm in _arms(hints[f.name]):
            if arm is type(None):
                optional = True
            elif typing.get_origin(arm) is typing.Literal:
                allowed = [*(allowed or []), *typing.get_args(arm)]
                kinds += [_SCALARS[type(a)] for a in typing.get_args(arm)]
            elif arm in _SCALARS:
                kinds.append(_SCALARS[arm])
            else:
                raise DprecError(f"{cls.__name__}.{f.name} is a {arm!r}: not a JSON scalar")
        out[f.name] = (tuple(dict.fromkeys(kinds)), None if allowed is None else tuple(allowed),
                       optional)
    return out


def _arms(hint: Any) -> tuple[Any, ...]:
    """The alternatives of a union (``X | None``, ``Optional[X]``), or the hint itself."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return tuple(a for h in typing.get_args(hint) for a in _arms(h))
    return (hint,)


def _kind(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return None


def config_from_json(cls: type, doc: Any) -> Any:
    """The config ``cls`` of the JSON object ``doc`` (module docstring); :class:`DprecError`
    naming the first key that is unknown, missing or ill-typed, or the class's own
    validation error."""
    if not isinstance(doc, Mapping):
        raise DprecError(f"a {cls.__name__} must be a JSON object, got {type(doc).__name__}")
    kinds = field_kinds(cls)
    unknown = sorted(str(k) for k in doc if k not in kinds)
    if unknown:
        raise DprecError(f"config has keys {cls.__name__} does not have: {', '.join(unknown)}")
    missing = [k for k in kinds if k not in doc]
    if missing:
        raise DprecError(f"config lacks {cls.__name__}'s fields: {', '.join(missing)}")
    for name, (taken, allowed, optional) in kinds.items():
        value, kind = doc[name], _kind(doc[name])
        if value is None and optional:
            continue
        ok = kind in taken or (kind == "an integer" and "a number" in taken)
        if not ok or (allowed is not None and value not in allowed):
            want = " or ".join(repr(a) for a in allowed) if allowed is not None else \
                " or ".join(taken)
            raise DprecError(f"config.{name} must be {want}{' or null' if optional else ''}, "
                             f"got {value!r}")
    return cls(**{k: doc[k] for k in kinds})


def recorded_config(cls: type, params: Mapping[str, Any]) -> Any:
    """The config ``cls`` a finished run recorded (its results file's ``parameters``): the
    fields ``params`` holds, type-checked as :func:`config_from_json` does, the others at
    their defaults; :class:`DprecError` for a value the class refuses."""
    if not isinstance(params, Mapping):
        raise DprecError(f"a run's parameters must be a JSON object, got {type(params).__name__}")
    kinds = field_kinds(cls)
    given = {k: v for k, v in params.items() if k in kinds}
    defaults = config_to_json(cls())
    return config_from_json(cls, {**defaults, **given})
