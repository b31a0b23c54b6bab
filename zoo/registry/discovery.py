"""Find and import plugins before any config is composed.

Sources, in order: the ``zoo.plugins`` entry-point group (the built-in
components come in this way too), then every ``.py`` file in the plugin
folders named by ``$ZOO_PLUGIN_DIRS`` (os.pathsep-separated) or the
``plugin_dirs=[...]`` config key.

A folder's files are imported as ``zoo.registry.folders.<folder>.<file>``, and
every folder loaded is added (absolute) to ``$ZOO_PLUGIN_DIRS``. Child processes
inherit the variable and mount the same folders, so a config pickled here, whose
nodes name plugin classes, unpickles there.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import pkgutil
import sys
from importlib.metadata import entry_points
from pathlib import Path

from zoo.errors import ZooError

ENTRY_POINT_GROUP = "zoo.plugins"
ENV_VAR = "ZOO_PLUGIN_DIRS"
FOLDERS_PACKAGE = "zoo.registry.folders"

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


def env_folders() -> list[Path]:
    """The folders named in ``$ZOO_PLUGIN_DIRS``, as absolute paths."""
    return [Path(p).expanduser().resolve() for p in os.environ.get(ENV_VAR, "").split(os.pathsep) if p]


def mount(folder: Path) -> str:
    """Make the absolute ``folder`` the package ``zoo.registry.folders.<folder name>``; return that name."""
    if "." in folder.name:
        raise PluginImportError(f"plugin folder {folder}: a '.' in its name cannot be part of a module name; rename it")
    name = f"{FOLDERS_PACKAGE}.{folder.name}"
    package = sys.modules.get(name)
    if package is None:
        spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
        spec.submodule_search_locations = [str(folder)]
        package = importlib.util.module_from_spec(spec)
        sys.modules[name] = package
        setattr(importlib.import_module(FOLDERS_PACKAGE), folder.name, package)
    elif list(package.__path__) != [str(folder)]:
        raise PluginImportError(
            f"plugin folders {package.__path__[0]} and {folder} have the same name '{folder.name}'; rename one of them"
        )
    return name


def mount_env_folders() -> None:
    """Mount every folder in ``$ZOO_PLUGIN_DIRS`` (done when :mod:`zoo.registry.folders` is imported)."""
    for folder in env_folders():
        mount(folder)


def export(folder: Path) -> None:
    """Add the absolute ``folder`` to ``$ZOO_PLUGIN_DIRS``, so processes started from now on mount it too."""
    listed = env_folders()
    if folder not in listed:
        os.environ[ENV_VAR] = os.pathsep.join(str(f) for f in [*listed, folder])


def load_folder(folder: str | os.PathLike) -> None:
    """Import every ``*.py`` file in ``folder`` (sorted, so the order is reproducible); again is a no-op."""
    path = Path(folder).expanduser().resolve()
    if path.is_file():
        raise PluginImportError(
            f"plugin folder {path} is a file, not a folder: put it in a folder of its own and give that folder "
            "(every *.py file in a plugin folder is imported)"
        )
    if not path.is_dir():
        raise PluginImportError(f"plugin folder {path} does not exist; fix {ENV_VAR} or plugin_dirs")
    package = mount(path)
    export(path)
    for file in sorted(path.glob("*.py")):
        try:
            importlib.import_module(f"{package}.{file.stem}")
        except Exception as error:
            raise PluginImportError(f"plugin file {file} failed to import: {type(error).__name__}: {error}") from error


def discover(folders: list[str] | tuple[str, ...] = ()) -> None:
    """Import every plugin this process can see, once: a folder this process discovered already is not read again
    (a process that composed its config discovers before its job does; a sweep's worker, handed the job's config
    pickled, discovers the folders it names)."""
    load_entry_points()
    for folder in [*env_folders(), *folders]:
        path = Path(folder).expanduser().resolve()
        if f"dir:{path}" not in _loaded:
            load_folder(path)
            _loaded.add(f"dir:{path}")
