"""One entry per system: its command-line name, config class, factory, task and privacy.

Settings reach a system only through its config: ``--param KEY=VALUE``, ``--config FILE``
(a TOML written by ``dprec tune``) or ``--epsilon`` (the config's ``epsilon`` field). A key
the system's config does not have is an error that lists the keys it has; fields that
define the system (e.g. ``flip`` of ``dplcf-sp``) are fixed by its name.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
import tomllib
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, fields, is_dataclass, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dprec.errors import DprecError

if TYPE_CHECKING:
    from dprec.systems.base import Recommender
    from dprec.systems.spec import SystemSpec

__all__ = [
    "ConfigFile", "SPEC_MODULES", "SYSTEMS",
    "check_model_memory", "config_fields", "config_to_toml", "make_config", "make_system",
    "model_memory_estimate", "parse_label", "private_systems", "read_config", "spec",
]


SPEC_MODULES = (
    "dprec.systems.baselines",
    "dprec.systems.dplcf.specs",
    "dprec.systems.central",
    "dprec.systems.fmf.specs",
    "dprec.systems.rating_baselines",
    "dprec.systems.rating_models",
    "dprec.systems.ldp_svd.specs",
    "dprec.systems.dp_mf",
    "dprec.systems.pnbm",
    "dprec.systems.privrec.specs",
    "dprec.systems.dp_pop.specs",
    "dprec.systems.dpals.specs",
    "dprec.systems.dp_fedavg.specs",
)
"""The one way a system is registered: its module (a single-module system) or its package's
``specs.py`` defines ``SPECS: list[SystemSpec]``, and that module is one line here. The
registry lists the systems in this order."""


@cache
def _specs() -> dict[str, SystemSpec]:
    specs: list[SystemSpec] = []
    for module in SPEC_MODULES:
        try:
            specs += importlib.import_module(module).SPECS
        except ModuleNotFoundError as e:  # an optional dependency missing: skip its systems
            if not e.name or not module.startswith(e.name):
                raise
    names = [s.name for s in specs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise DprecError(f"systems registered twice: {', '.join(twice)}")
    return {s.name: s for s in specs}


class _Registry(Mapping[str, "SystemSpec"]):
    """The registered systems by name, in :data:`SPEC_MODULES`' order. The modules are
    imported on the first look-up, not when the registry is: importing it costs nothing,
    and a device that only lists the deployable packages imports no system."""

    def __getitem__(self, name: str) -> SystemSpec:
        return _specs()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(_specs())

    def __len__(self) -> int:
        return len(_specs())

    def __repr__(self) -> str:
        return f"SYSTEMS({', '.join(self)})"


SYSTEMS: Mapping[str, SystemSpec] = _Registry()


def spec(name: str) -> SystemSpec:
    """The registered system ``name`` (a clear error listing the known names)."""
    if name not in SYSTEMS:
        raise DprecError(f"unknown system {name!r}; known systems: {', '.join(SYSTEMS)}")
    return SYSTEMS[name]


def parse_label(label: str) -> tuple[str, dict[str, str]]:
    """``"ldp-svd[mechanism=duchi,epsilon=2]"`` -> ("ldp-svd", {"mechanism": "duchi", ...}).

    A label names one configured variant of a system in a comparison; a bare name has no
    settings of its own.
    """
    name, bracket, rest = label.strip().partition("[")
    params: dict[str, str] = {}
    if bracket:
        if not rest.endswith("]"):
            raise DprecError(f"system label {label!r} must look like NAME[KEY=VALUE,...]")
        for item in filter(None, (x.strip() for x in rest[:-1].split(","))):
            key, eq, value = item.partition("=")
            if not eq or not key.strip():
                raise DprecError(f"system label {label!r}: {item!r} is not KEY=VALUE")
            params[key.strip()] = value.strip()
    spec(name)
    return name, params


def private_systems() -> list[str]:
    return [n for n, s in SYSTEMS.items() if s.private]


def _field_type(cfg_cls: type, name: str) -> Any:
    hints = typing.get_type_hints(cfg_cls)
    return hints[name]


def _coerce(system: str, key: str, value: object, tp: Any, typed: bool = False) -> object:
    """``value`` (command-line text, or with ``typed`` a TOML value that must already have
    the field's type: ``neighbours = "20"`` is an error there) as the field's type."""
    args = typing.get_args(tp)
    origin = typing.get_origin(tp)
    text = value if isinstance(value, str) else None
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        if value is None or (text is not None and text.lower() == "none" and not typed):
            return None
        inner = [a for a in args if a is not type(None)]
        return _coerce(system, key, value, inner[0], typed)
    if typed and not _has_toml_type(value, tp, origin, args):
        want = _type_name(tp, origin, args)
        raise DprecError(f"{system}: {key} must be {want}, got {value!r} "
                         f"({type(value).__name__}); write it without quotes"
                         if isinstance(value, str) else
                         f"{system}: {key} must be {want}, got {value!r} "
                         f"({type(value).__name__})")
    try:
        if origin is typing.Literal:
            if value not in args:
                raise ValueError
            return value
        if tp is bool:
            if isinstance(value, bool):
                return value
            if text is not None and text.lower() in ("true", "false", "1", "0"):
                return text.lower() in ("true", "1")
            raise ValueError
        if tp is int:
            if isinstance(value, bool):
                raise ValueError
            if isinstance(value, float) and not value.is_integer():
                raise ValueError
            return int(value) if not isinstance(value, str) else int(value.strip())
        if tp is float:
            if isinstance(value, bool):
                raise ValueError
            return float(value)
        if tp is str:
            return str(value)
    except (TypeError, ValueError):
        pass
    else:
        return value
    raise DprecError(f"{system}: {key} must be {_type_name(tp, origin, args)}, got {value!r}")


def _type_name(tp: Any, origin: Any, args: tuple) -> str:
    return (" or ".join(repr(a) for a in args) if origin is typing.Literal
            else getattr(tp, "__name__", str(tp)))


def _has_toml_type(value: object, tp: Any, origin: Any, args: tuple) -> bool:
    """Whether a typed (TOML) value already has the field's type: an integer for int, a
    number for float, a boolean for bool, text for str and text literals."""
    if origin is typing.Literal:
        return any(type(value) is type(a) for a in args)
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if tp is str:
        return isinstance(value, str)
    return True


def make_config(name: str, params: Mapping[str, object] | None = None,
                base: Any | None = None, *, typed: bool = False) -> Any:
    """The config of ``name`` with ``params`` applied, validated: command-line text is
    converted to each field's type; with ``typed`` (values read from TOML) every value
    must already have it."""
    s = spec(name)
    cfg = base if base is not None else s.default_config()
    params = dict(params or {})
    if not params:
        return cfg
    fixed = sorted(k for k in params if k in s.fixed)
    if fixed:
        raise DprecError(f"{name}: {', '.join(fixed)} fixed by the system name "
                         f"({', '.join(f'{k}={s.fixed[k]}' for k in fixed)})")
    known = s.settable()
    unknown = sorted(set(params) - set(known))
    if unknown:
        options = ", ".join(known) if known else "none"
        raise DprecError(f"{name} has no option {', '.join(unknown)}; its options: {options} "
                         f"(see `dprec systems {name}`)")
    values = {k: _coerce(name, k, v, _field_type(s.config, k), typed)
              for k, v in params.items()}
    try:
        return replace(cfg, **values)
    except DprecError as e:
        raise type(e)(f"{name}: {e}") from None


def model_memory_estimate(config: Any, n_users: int, n_items: int) -> int:
    """Bytes of a factor model's main arrays: float64 user and item factors and one F x F
    Gram matrix, 8 ((n_users + n_items) F + F^2), for a config with ``factors`` (0 for the
    others). ALS holds these in float64; the float32 models need at least half of it."""
    f = getattr(config, "factors", None)
    if not isinstance(f, int) or isinstance(f, bool):
        return 0
    from dprec.models.als import ALSConfig
    itemsize = 8 if isinstance(config, ALSConfig) else 4
    return itemsize * (int(n_users) + int(n_items)) * f + 8 * f * f


def check_model_memory(name: str, config: Any, n_users: int = 0, n_items: int = 0) -> None:
    """DprecError, before any fit, when the system's factor arrays cannot fit in memory (with
    0 users and items: the F x F part alone, checked before the data load)."""
    from dprec.data.synthetic import require_memory
    need = model_memory_estimate(config, n_users, n_items)
    f = getattr(config, "factors", None)
    require_memory(need, f"{name} with factors={f} on {n_users:,} users x {n_items:,} items",
                   "pass fewer factors (--param factors=...)")


def make_system(name: str, params: Mapping[str, object] | None = None,
                config: Any | None = None) -> Recommender:
    """A fresh, unfitted system: ``config`` (or the paper's) with ``params`` applied."""
    return spec(name).build(make_config(name, params, config))


def config_fields(name: str) -> list[tuple[str, str, object, str, bool]]:
    """(field, type, default, docstring, fixed) for every config field of ``name``."""
    s = spec(name)
    docs = _field_docs(s.config)
    default = s.default_config()
    hints = typing.get_type_hints(s.config)
    out = []
    for f in fields(s.config):
        tp = hints[f.name]
        tname = getattr(tp, "__name__", None) or str(tp).replace("typing.", "")
        out.append((f.name, tname, getattr(default, f.name), docs.get(f.name, ""),
                    f.name in s.fixed))
    return out


def _field_docs(cls: type) -> dict[str, str]:
    """Attribute docstrings (a string right after a field) of a dataclass and its bases."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not is_dataclass(klass) or klass is object:
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError):
            continue
        body = tree.body[0].body  # type: ignore[attr-defined]
        for a, b in zip(body, body[1:], strict=False):
            if (isinstance(a, ast.AnnAssign) and isinstance(a.target, ast.Name)
                    and isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant)
                    and isinstance(b.value.value, str)):
                docs[a.target.id] = " ".join(b.value.value.split())
    return docs


def config_to_toml(name: str, config: Any, provenance: Mapping[str, object]) -> str:
    """A TOML document ``--config`` reads back: the system, its settable fields, provenance."""
    s = spec(name)
    lines = [f'system = "{name}"', "", "[config]"]
    for k, v in asdict(config).items():
        if k in s.fixed or v is None:
            continue
        lines.append(f"{k} = {_toml_value(v)}")
    lines += ["", "[provenance]"]
    for k, v in provenance.items():
        lines.append(f"{k} = {_toml_value(v)}")
    return "\n".join(lines) + "\n"


def _toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{" + ", ".join(f'"{k}" = {_toml_value(x)}' for k, x in v.items()) + "}"
    escaped = str(v).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


@dataclass(frozen=True)
class ConfigFile:
    """A config read from TOML: the system it is for, its settings and their provenance."""

    system: str
    params: dict[str, object]
    provenance: dict[str, object]
    path: str

    @property
    def origin(self) -> str:
        """"tuned" for a file ``dprec tune`` chose on validation (its provenance has
        ``tuned_on``), else "transferred, not tuned here" (carried over from elsewhere)."""
        return "tuned" if "tuned_on" in self.provenance else "transferred, not tuned here"


def read_config(path: Path) -> ConfigFile:
    """Read a ``--config`` TOML (``system = ...``, ``[config]``, optional ``[provenance]``)."""
    try:
        doc = tomllib.loads(Path(path).read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise DprecError(f"config file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as e:
        raise DprecError(f"cannot read config file {path}: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise DprecError(f"config file {path} is not valid TOML: {e}") from None
    system = doc.get("system")
    if not isinstance(system, str):
        raise DprecError(f"config file {path} must name its system: system = \"NAME\"")
    params = doc.get("config", {})
    if not isinstance(params, dict):
        raise DprecError(f"config file {path}: [config] must be a table")
    extra = sorted(set(doc) - {"system", "config", "provenance"})
    if extra:
        raise DprecError(f"config file {path}: unknown top-level key(s) {', '.join(extra)}")
    spec(system)
    try:
        make_config(system, params, typed=True)
    except DprecError as e:
        raise DprecError(f"config file {path}: {e}") from None
    return ConfigFile(system, dict(params), dict(doc.get("provenance", {})), str(path))
