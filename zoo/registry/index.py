"""A cached index of the registered components: what ``zoo list`` and ``zoo --help`` show, read without importing a
plugin (plugins import torch, which takes seconds where ``zoo --help`` should answer at once).

The index is made by importing every plugin once (:func:`zoo.registry.discovery.discover`) and kept in the cache
folder (``$ZOO_CACHE_DIR``, default ``~/.cache/zoo``) with a fingerprint of everything that could change it: Python's
version, the installed versions of zoo and of each distribution declaring plugins, and the bytes of every source
file of zoo, of each ``zoo.plugins`` entry point's package and of each folder in ``$ZOO_PLUGIN_DIRS``. An index
whose fingerprint differs is made again, so an edited, installed or removed plugin shows at once.
"""

from __future__ import annotations

import dataclasses
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

from zoo.registry.discovery import ENTRY_POINT_GROUP, env_folders

#: Bumped when what the index holds changes shape, so an older zoo's index is made again.
FORMAT = 1


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


def store_stand_ins() -> None:
    """Store every indexed component in Hydra's ConfigStore as registering it does, its defaults as a plain node in
    place of its dataclass: enough for ``zoo train --help``, which lists the groups' choices and prints the composed
    defaults, without importing a plugin (nothing is checked against them: a job imports the plugins)."""
    from zoo.registry.entries import config_store, store_presets
    from zoo.registry.kinds import kind

    for record in _index()["components"]:
        for group in kind(record["kind"]).groups:
            config_store().store(group=group, name=record["name"], node=record["node"], provider=record["module"])
        store_presets(record["kind"], record["presets"], record["module"])


def task_commands() -> dict[str, str]:
    """The commands the registered tasks declare (``translate``, ``caption``), each with its one-line summary."""
    return _index()["commands"]


def _index() -> dict[str, Any]:
    """The index for this installation: read from the cache folder, or made and written there."""
    stamp = fingerprint()
    path = index_file()
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
    return Path(os.environ.get("ZOO_CACHE_DIR") or "~/.cache/zoo").expanduser() / "registry-index.json"


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
