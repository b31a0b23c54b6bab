"""Find and import plugins before any config is composed.

Sources, in order: the ``zoo.plugins`` entry-point group (the built-in
components come in this way too), then every ``.py`` file in the plugin
folders named by ``$ZOO_PLUGIN_DIRS`` (os.pathsep-separated) or the
``plugin_dirs=[...]`` config key.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
import sys
from importlib.metadata import entry_points
from pathlib import Path

from zoo.errors import ZooError

ENTRY_POINT_GROUP = "zoo.plugins"
ENV_VAR = "ZOO_PLUGIN_DIRS"

_loaded: set[str] = set()


class PluginImportError(ZooError, ImportError):
    """A plugin module could not be imported."""


def _import_tree(module_name: str, origin: str) -> None:
    """Import a module and, if it is a package, every module below it."""
    try:
        module = importlib.import_module(module_name)
        for info in pkgutil.walk_packages(getattr(module, "__path__", []), prefix=module_name + "."):
            importlib.import_module(info.name)
    except Exception as error:  # any failure inside a plugin is reported the same way
        raise PluginImportError(f"plugin {origin} failed to import: {type(error).__name__}: {error}") from error


def load_entry_points() -> None:
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        key = f"ep:{ep.value}"
        if key not in _loaded:
            _import_tree(ep.value, f"entry point '{ep.name} = {ep.value}'")
            _loaded.add(key)


def load_folder(folder: str | os.PathLike) -> None:
    """Import every ``*.py`` file in ``folder`` (sorted, so the order is reproducible)."""
    path = Path(folder).expanduser().resolve()
    if not path.is_dir():
        raise PluginImportError(f"plugin folder {path} does not exist; fix {ENV_VAR} or plugin_dirs")
    for file in sorted(path.glob("*.py")):
        key = f"file:{file}"
        if key in _loaded:
            continue
        module_name = f"zoo_local_plugins.{path.name}.{file.stem}"
        spec = importlib.util.spec_from_file_location(module_name, file)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as error:
            del sys.modules[module_name]
            raise PluginImportError(f"plugin file {file} failed to import: {type(error).__name__}: {error}") from error
        _loaded.add(key)


def discover(folders: list[str] | tuple[str, ...] = ()) -> None:
    """Import every plugin this process can see; safe to call more than once."""
    load_entry_points()
    env = [p for p in os.environ.get(ENV_VAR, "").split(os.pathsep) if p]
    for folder in [*env, *folders]:
        load_folder(folder)
