"""A cached index of the registered components: what ``zoo list`` and ``zoo --help`` show, read without importing a
plugin (plugins import torch, which takes seconds where ``zoo --help`` should answer at once), and where each
component's Config dataclass lives, so that a config whose components keep theirs in a module of its own is composed
and checked without importing a plugin (``zoo train encoder.hidden_size=0`` answers in a second).

The index is made by importing every plugin once (:func:`zoo.registry.discovery.discover`) and kept in the cache
folder (``$ZOO_CACHE_DIR``, default ``~/.cache/zoo``) with a fingerprint of everything that could change it: Python's
version, the installed versions of zoo and of each distribution declaring plugins, and the bytes of every source
file of zoo, of each ``zoo.plugins`` entry point's package and of each folder in ``$ZOO_PLUGIN_DIRS``. An index
whose fingerprint differs is made again, so an edited, installed or removed plugin shows at once.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from importlib.metadata import EntryPoints, entry_points, version
from pathlib import Path
from typing import Any

from zoo.registry.discovery import ENTRY_POINT_GROUP, ENV_VAR, env_folders

#: Bumped when what the index holds changes shape, so an older zoo's index is made again.
FORMAT = 2
#: The index's file in the cache folder.
INDEX_FILE = "registry-index.json"


@dataclass(frozen=True)
class Field:
    """One config field as ``zoo list`` prints it; ``default`` is the default's ``repr``."""

    name: str
    type_name: str
    default: str
    choices: tuple[str, ...] | None
    comment: str


@dataclass(frozen=True)
class Component:
    """One registered component as ``zoo list`` prints it."""

    kind: str
    name: str
    module: str
    description: str
    chooses: dict[str, str]  # the other kinds' defaults a task chooses (``component_defaults``)
    fields: tuple[Field, ...]


def components() -> list[Component]:
    """Every registered component, sorted by kind and name."""
    return [_component(record) for record in _index()["components"]]


def _component(record: dict[str, Any]) -> Component:
    fields = (Field(**{**f, "choices": tuple(f["choices"]) if f["choices"] else None}) for f in record["fields"])
    shown = {key: record[key] for key in ("kind", "name", "module", "description", "chooses")}
    return Component(**shown, fields=tuple(fields))


def store_configs() -> None:
    """Store every indexed component in Hydra's ConfigStore as registering it does, without importing a plugin: its
    Config dataclass where that lives in a module of its own (:func:`own_config`), else its defaults as a plain
    node. That is enough for ``zoo train --help``, which lists the groups' choices and prints the composed defaults,
    and for checking a config whose chosen components all keep their Config apart (:func:`checkable`); a component
    registered in this process already keeps its own."""
    from zoo.registry.entries import config_store, names, store_presets, tagged_config
    from zoo.registry.kinds import kind

    for record in _index()["components"]:
        if not kind(record["kind"]).groups or record["name"] in names(record["kind"]):
            continue  # a metric is named in a list, not composed from a group
        config, module = own_config(record), record["module"]
        node = record["node"]
        if config is not None:
            node = tagged_config(record["kind"], record["name"], config, record["chooses"], module)
        for group in kind(record["kind"]).groups:
            config_store().store(group=group, name=record["name"], node=node, provider=module)
        store_presets(record["kind"], record["presets"], module)


#: How a module holding only a plugin's Config (and what its fields are made of) ends its name: it imports nothing
#: heavier than ``zoo.api``'s checks, so the config is checked without importing the plugin.
CONFIG_MODULE_SUFFIX = "_config"


def own_config(record: dict[str, Any]) -> type | None:
    """The component's Config dataclass where it lives in a module of its own (``rnn_config`` beside ``rnn``),
    imported from there; None where it is the plugin's (nested in its class), which only importing the plugin
    gives."""
    if not keeps_config_apart(record):
        return None
    module, qualname = record["config"].split(":")
    found: Any = importlib.import_module(module)
    for name in qualname.split("."):
        found = getattr(found, name)
    return found


def config_class(kind: str, name: str) -> type:
    """The Config dataclass of component ``kind``/``name``: the registered one, else the one its module of its own
    holds (:func:`own_config`), else the plugin's, every plugin imported to find it (an unknown name is an error
    listing the registered ones)."""
    from zoo.registry.discovery import discover
    from zoo.registry.entries import get, names

    if name not in names(kind):
        record = _record(kind, name)
        config = own_config(record) if record is not None else None
        if config is not None:
            return config
        discover()
    return get(kind, name).cls.Config


def checkable(cfg: Any) -> bool:
    """Whether every component ``cfg`` chooses was composed with its Config dataclass, so its types were checked:
    registered in this process, or keeping its Config in a module of its own. Otherwise the plugins are imported
    and the config is composed again."""
    from zoo.registry.entries import names
    from zoo.registry.kinds import GROUP_KINDS

    for declared in GROUP_KINDS:
        for group in declared.groups:
            name = cfg[group].name if cfg.get(group) is not None else None
            if name is None or name in names(declared.name):
                continue
            record = _record(declared.name, name)
            if record is None or not keeps_config_apart(record):
                return False
    return True


def keeps_config_apart(record: dict[str, Any]) -> bool:
    """Whether the component keeps its Config in a module of its own (:data:`CONFIG_MODULE_SUFFIX`)."""
    return record["config"].split(":")[0].endswith(CONFIG_MODULE_SUFFIX)


def _record(kind: str, name: str) -> dict[str, Any] | None:
    return next((r for r in _index()["components"] if (r["kind"], r["name"]) == (kind, name)), None)


def task_commands() -> dict[str, str]:
    """The commands the registered tasks declare (``translate``, ``caption``), each with its one-line summary."""
    return _index()["commands"]


def _index() -> dict[str, Any]:
    """The index for this installation: read from the cache folder, or made and written there; once a process for
    each set of plugin folders (fingerprinting the sources takes a tenth of a second, and a check asks often)."""
    return _index_of(os.environ.get(ENV_VAR, ""), index_file())


@functools.cache
def _index_of(folders: str, path: Path) -> dict[str, Any]:
    """The index kept at ``path``, for the plugin folders ``folders`` ($ZOO_PLUGIN_DIRS, which change what it holds)."""
    stamp = fingerprint()
    try:
        cached = json.loads(path.read_text())
    except (OSError, ValueError):
        cached = None
    if cached and cached.get("fingerprint") == stamp:
        return cached
    made = {"fingerprint": stamp, **_made()}
    _write(path, made)
    return made


def index_file() -> Path:
    return Path(os.environ.get("ZOO_CACHE_DIR") or "~/.cache/zoo").expanduser() / INDEX_FILE


def fingerprint() -> str:
    """A hash of the versions and source files that make the registry what it is."""
    plugins = entry_points(group=ENTRY_POINT_GROUP)
    digest = hashlib.sha256(f"{FORMAT} {sys.version}".encode())
    for dist in sorted({"zoo"} | {ep.dist.name for ep in plugins if ep.dist is not None}):
        digest.update(f"{dist}=={version(dist)}".encode())
    # The entry points and folders as named, so a folder that is missing now is discovered, and refused, again.
    named = [f"{ep.name}={ep.value}" for ep in plugins] + [str(folder) for folder in env_folders()]
    digest.update("\n".join(sorted(named)).encode())
    for root in _source_roots(plugins):
        for file in sorted(root.rglob("*.py")):
            digest.update(str(file).encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()


def _source_roots(plugins: EntryPoints) -> list[Path]:
    """zoo's folder, each entry point's package folder (found without importing it) and each plugin folder."""
    roots = [Path(__file__).resolve().parents[1]]
    for ep in plugins:
        spec = importlib.util.find_spec(ep.value)
        if spec is not None:
            roots += [Path(p) for p in (spec.submodule_search_locations or [spec.origin])]
    return [*roots, *(folder for folder in env_folders() if folder.is_dir())]


def declared_commands() -> dict[str, str]:
    """The commands of the tasks registered in this process now (:attr:`zoo.contracts.Task.command`), each with its
    summary; the index holds those of the plugins every process discovers, and a run's own plugin folder may add
    more."""
    from zoo.registry.entries import entries

    commands: dict[str, str] = {}
    for entry in entries("task"):
        if entry.cls.command is not None:
            commands.setdefault(entry.cls.command.name, entry.cls.command.summary)
    return commands


def _made() -> dict[str, Any]:
    """The index's content, from the registry with every plugin imported."""
    from omegaconf import OmegaConf

    from zoo.registry.discovery import discover
    from zoo.registry.entries import entries

    discover()
    listed = [
        {
            "kind": entry.kind,
            "name": entry.name,
            "module": entry.module,
            "description": entry.description,
            "chooses": {k: str(v) for k, v in getattr(entry.cls, "component_defaults", {}).items()},
            "fields": [{**dataclasses.asdict(f), "default": repr(f.default)} for f in entry.fields()],
            "node": OmegaConf.to_container(OmegaConf.structured(entry.config_cls), enum_to_str=True),
            "config": f"{entry.cls.Config.__module__}:{entry.cls.Config.__qualname__}",
            "presets": getattr(entry.cls, "presets", {}),
        }
        for entry in entries()
    ]
    return {"components": listed, "commands": declared_commands()}


def _write(path: Path, index: dict[str, Any]) -> None:
    """Write the index whole (aside, then renamed into place); a cache folder that cannot be written only means the
    next command makes it again."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False) as out:
            json.dump(index, out)
        os.replace(out.name, path)
    except OSError:
        pass
