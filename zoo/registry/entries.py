"""One registry for every component, keyed by kind and name.

A component is a class with a nested dataclass ``Config``. Registering it also
stores that dataclass in Hydra's ConfigStore (group = kind, and each of the
kind's optional groups such as ``cross_attention``; name = name), so a
misspelt or mistyped field is rejected when the config is composed, long before
anything trains.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import io
import tokenize
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from zoo.config.suggest import did_you_mean, with_hint
from zoo.errors import ZooError
from zoo.registry.kinds import kind as declared_kind


class RegistryError(ZooError, ValueError):
    """A component could not be registered or found."""


@dataclass(frozen=True)
class FieldInfo:
    """One config field as ``zoo list`` shows it."""

    name: str
    type_name: str
    default: Any  # as a config spells it: an Enum member becomes its value; "???" when required
    choices: tuple[str, ...] | None  # the allowed values of an Enum field, else None
    comment: str  # the ``# ...`` text after the field on its line in the dataclass source, or ""


@dataclass(frozen=True)
class Entry:
    """What the registry knows about one component."""

    kind: str
    name: str
    cls: type
    config_cls: type
    module: str
    description: str

    def fields(self) -> list[FieldInfo]:
        """Every config field except the ``name`` tag and Hydra's ``defaults``, with its allowed values and comment."""
        hints = _type_hints(self.config_cls)
        rows = []
        for f in dataclasses.fields(self.config_cls):
            if f.name in ("name", "defaults"):
                continue
            if f.default is not dataclasses.MISSING:
                default = f.default
            elif f.default_factory is not dataclasses.MISSING:
                default = f.default_factory()
            else:
                default = "???"
            rows.append(
                FieldInfo(
                    f.name,
                    _type_name(f.type),
                    default.value if isinstance(default, Enum) else default,
                    _choices(hints.get(f.name)),
                    _field_comment(self.config_cls, f.name),
                )
            )
        return rows


_ENTRIES: dict[tuple[str, str], Entry] = {}


def _type_name(tp: Any) -> str:
    return tp if isinstance(tp, str) else getattr(tp, "__name__", str(tp))


def _type_hints(cls: type) -> dict[str, Any]:
    """The field types of ``cls`` with string annotations resolved; {} where they cannot be."""
    try:
        return typing.get_type_hints(cls)
    except Exception:  # a plugin's annotation may name something only a type checker sees
        return {}


def _choices(tp: Any) -> tuple[str, ...] | None:
    """The member names of an Enum type, or of the Enum inside ``Optional[...]``; None for other types."""
    for candidate in (tp, *typing.get_args(tp)):
        if isinstance(candidate, type) and issubclass(candidate, Enum):
            return tuple(candidate.__members__)
    return None


def _field_comment(cls: type, field: str) -> str:
    """The comment after ``field`` in the source of the class that declares it (a base class for inherited fields)."""
    for klass in cls.__mro__:
        if field in vars(klass).get("__annotations__", {}):
            return _declared_comments(klass).get(field, "")
    return ""


@functools.cache
def _declared_comments(klass: type) -> dict[str, str]:
    """Field name -> the ``# ...`` text on the line where ``klass`` declares it ({} without source)."""
    try:
        source = Path(inspect.getsourcefile(klass)).read_text()
    except (TypeError, OSError):  # built at runtime (make_dataclass) or no file
        return {}
    node: Any = ast.parse(source)
    for name in klass.__qualname__.split("."):  # down to a nested class such as Encoder.Config
        node = next((n for n in node.body if isinstance(n, ast.ClassDef) and n.name == name), None)
        if node is None:  # e.g. a class defined inside a function
            return {}
    lines = source.splitlines()
    comments = {
        token.start[0]: token.string.lstrip("#").strip()
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    }
    found = {}
    for statement in node.body:
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            text = _comment_of(statement, lines, comments)
            if text:
                found[statement.target.id] = text
    return found


def _comment_of(statement: ast.stmt, lines: list[str], comments: dict[int, str]) -> str:
    """The comments on a field's own lines; without any, the block of comment lines right above it
    (where a field's long comment goes so that the line stays short)."""
    inline = [comments[n] for n in range(statement.lineno, statement.end_lineno + 1) if n in comments]
    if inline:
        return " ".join(inline)
    above = []
    n = statement.lineno - 1
    while n in comments and lines[n - 1].lstrip().startswith("#"):
        above.insert(0, comments[n])
        n -= 1
    return " ".join(above)


def tagged_config(kind: str, name: str, base: type, chosen: dict[str, str], module: str) -> type:
    """The component's Config ``base`` plus a ``name`` field that says which class to build, and a task's choices of
    other kinds' defaults (``chosen``, its ``component_defaults``); made as the component's module's."""
    fields: list[tuple] = [("name", str, dataclasses.field(default=name))]
    if chosen:
        if not declared_kind(kind).chooses_defaults:
            raise RegistryError(
                f"{kind} '{name}' sets component_defaults, but only a task may choose other kinds' defaults"
            )
        # Hydra's defaults list: choices for other groups that the command line or an experiment may still override.
        overrides = [{f"override /{group}@_global_.{group}": choice} for group, choice in chosen.items()]
        fields.append(("defaults", list, dataclasses.field(default_factory=lambda: [*overrides, "_self_"])))
    tagged = dataclasses.make_dataclass(f"{kind.capitalize()}_{name}", fields, bases=(base,))
    tagged.__module__ = module
    return tagged


#: The config that lists every component's preset groups in the defaults list, null unless chosen, so that
#: ``kv_layout=gqa`` composes without Hydra's ``+`` (the schema includes it after the kinds).
PRESETS_CONFIG = "zoo_presets"
_preset_groups: list[str] = []


def store_presets(kind: str, presets: dict[str, dict[str, dict[str, Any]]], provider: str) -> None:
    """Store each of a component's presets ({group: {name: {field: value}}}, its ``presets``) as a choice of its
    group that sets those fields of the kind's section, and list the group in :data:`PRESETS_CONFIG`."""
    for group, choices in presets.items():
        for choice, values in choices.items():
            config_store().store(
                group=group, name=choice, node={kind: dict(values)}, package="_global_", provider=provider
            )
        if group not in _preset_groups:
            _preset_groups.append(group)
    store_preset_groups()


def store_preset_groups() -> None:
    """Store :data:`PRESETS_CONFIG` with every preset group registered so far (the schema stores it first)."""
    node = {"defaults": [{group: None} for group in _preset_groups]}
    config_store().store(name=PRESETS_CONFIG, node=node, package="_global_")


def config_store() -> Any:
    """Hydra's ConfigStore, imported on first use: ``zoo list`` and ``zoo --help`` read the registry's index and
    never need Hydra."""
    from zoo.config.store import ConfigStore

    return ConfigStore.instance()


def register(kind: str, name: str) -> Callable[[type], type]:
    """Class decorator: ``@register("attention", "cosine")``.

    The class must subclass its kind's base in :mod:`zoo.contracts` (``Attention`` for ``attention``) and have a
    nested ``@dataclass Config`` whose fields all have defaults: checked here, at import, so a plugin that breaks
    the contract is named before any config is composed.
    """
    declared = declared_kind(kind)  # an unknown kind is an error naming the known ones

    def decorate(cls: type) -> type:
        _check_contract(declared.name, name, declared.contract, cls)
        existing = _ENTRIES.get((kind, name))
        if existing is not None and existing.cls is not cls and not _same_plugin(existing.cls, cls):
            raise RegistryError(
                f"{kind} '{name}' is registered twice, by {_origin(existing.cls)} and by {_origin(cls)}, "
                "and their code differs; keep one: uninstall the package, drop the folder from plugin_dirs and "
                "ZOO_PLUGIN_DIRS, or rename one of them"
            )
        if existing is not None and existing.cls is not cls:
            return existing.cls  # the same plugin again (its folder and its installed package): keep the first
        config_cls = tagged_config(kind, name, cls.Config, getattr(cls, "component_defaults", {}), cls.__module__)
        own = cls.__dict__.get("__doc__")  # its own: a base's docstring would describe every plugin of the kind
        doc = inspect.cleandoc(own) if isinstance(own, str) else ""
        entry = Entry(kind, name, cls, config_cls, cls.__module__, doc.splitlines()[0] if doc else "")
        _ENTRIES[(kind, name)] = entry
        for group in declared_kind(kind).groups:  # config groups' choices; metrics are named in a list instead
            config_store().store(group=group, name=name, node=config_cls, provider=cls.__module__)
        store_presets(kind, getattr(cls, "presets", {}), cls.__module__)
        cls.registry_entry = entry
        return cls

    return decorate


def _check_contract(kind: str, name: str, base_name: str, cls: type) -> None:
    """The class subclasses its kind's base and has a nested ``@dataclass Config`` with a default for each field."""
    from zoo import contracts

    base = getattr(contracts, base_name)
    where = f"{cls.__module__}.{cls.__qualname__}"
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise RegistryError(
            f"{where} registers as {kind} '{name}' but does not subclass zoo.api.{base_name}; "
            f"declare it as `class {getattr(cls, '__name__', cls)}({base_name})`"
        )
    config = vars(cls).get("Config", getattr(cls, "Config", None))
    if config is None or not dataclasses.is_dataclass(config):
        raise RegistryError(f"{where} needs a nested @dataclass named Config to register as {kind} '{name}'")
    required = [f.name for f in dataclasses.fields(config) if _required(f)]
    if required:
        raise RegistryError(
            f"{where}.Config field(s) {', '.join(required)} have no default; give each one, so that `{kind}={name}` "
            "alone makes a working config"
        )


def _required(field: dataclasses.Field) -> bool:
    return field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING


def _origin(cls: type) -> str:
    """Where a class comes from: its module, and its file where there is one."""
    try:
        return f"{cls.__module__}.{cls.__qualname__} ({inspect.getsourcefile(cls)})"
    except TypeError:  # a class made at runtime
        return f"{cls.__module__}.{cls.__qualname__}"


def _same_plugin(first: type, second: type) -> bool:
    """One plugin reached twice: the same class name in a file of the same name and the same text (a run's
    plugin folder and the package it was later installed as)."""
    if first.__qualname__ != second.__qualname__:
        return False
    try:
        files = [Path(inspect.getsourcefile(cls)) for cls in (first, second)]
    except TypeError:
        return False
    return files[0].name == files[1].name and files[0].read_bytes() == files[1].read_bytes()


def get(kind: str, name: str) -> Entry:
    """The entry for ``kind``/``name``, or an error listing what is registered."""
    entry = _ENTRIES.get((kind, name))
    if entry is None:
        known = ", ".join(names(kind)) or "none"
        raise RegistryError(
            with_hint(
                f"unknown {kind} '{name}'",
                did_you_mean(str(name), names(kind)),
                f"registered {kind} components: {known}",
            )
        )
    return entry


def names(kind: str) -> list[str]:
    return sorted(n for k, n in _ENTRIES if k == kind)


def entries(kind: str | None = None) -> Iterator[Entry]:
    for key in sorted(_ENTRIES):
        if kind is None or key[0] == kind:
            yield _ENTRIES[key]


def build(kind: str, cfg: Any, **kwargs: Any) -> Any:
    """Instantiate the component named by ``cfg.name`` with its typed config.

    ``cfg`` may be an OmegaConf node or a plain mapping; unknown fields are an error.
    """
    from omegaconf import OmegaConf

    if OmegaConf.is_config(cfg):
        cfg = OmegaConf.to_container(cfg, resolve=True)
    cfg = dict(cfg)
    name = cfg.pop("name", None)
    if name is None:
        raise RegistryError(f"{kind} config has no 'name'; choose one of: {', '.join(names(kind))}")
    entry = get(kind, name)
    base = entry.cls.Config
    allowed = {f.name for f in dataclasses.fields(base)}
    unknown = sorted(set(cfg) - allowed)
    if unknown:
        raise RegistryError(
            with_hint(
                f"{kind} '{name}' has no field(s) {', '.join(unknown)}",
                did_you_mean(unknown[0], allowed),
                f"fields: {', '.join(sorted(allowed))}",
            )
        )
    return entry.cls(base(**cfg), **kwargs)


def default_config(kind: str, name: str, **overrides: Any) -> dict:
    """A plain dict config for ``kind``/``name`` with its defaults (handy in tests and scripts)."""
    cfg = dataclasses.asdict(get(kind, name).cls.Config())
    cfg.update(overrides)
    cfg["name"] = name
    return cfg
