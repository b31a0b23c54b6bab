"""What a run records to be used again from anywhere, and how a run's plugins are found again.

Once a run has passed its checks, :func:`write_run_files` writes what Hydra would have (``.hydra/``), the
resolved ``config.yaml`` with ``plugin_dirs`` absolute, a copy of every plugin folder's sources under
``plugins/`` and ``provenance.json``: versions, the plugin folders, and for every component its
kind, name, module, and package with version or plugin folder and file. :func:`load_run_plugins` is
the other side, used by :meth:`zoo.inference.Predictor.from_run`: it loads the recorded folders (or
the run's copies of them) and names any component still missing with how to get it.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import logging
import platform
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from zoo.errors import ZooError
from zoo.registry.discovery import FOLDERS_PACKAGE
from zoo.run.layout import CONFIG_FILE, HYDRA_DIR, OVERRIDES_FILE, PLUGINS_DIR, PROVENANCE_FILE

log = logging.getLogger("zoo.run")

PROVENANCE_VERSION = 1


def write_run_files(run_dir: Path, cfg: DictConfig, metrics: Iterable[str]) -> None:
    """Everything a claimed run writes before it trains: Hydra's ``.hydra/`` files (the config as composed),
    ``config.yaml`` (resolved, ``plugin_dirs`` absolute: every folder this process loaded), the plugin folders'
    sources and ``provenance.json``. ``cfg.plugin_dirs`` is made absolute in place, so the checkpoint's copy of
    the config says the same."""
    write_hydra_files(run_dir, cfg)
    folders = loaded_plugin_folders()
    cfg.plugin_dirs = [str(folder) for folder in folders]
    (run_dir / CONFIG_FILE).write_text(OmegaConf.to_yaml(cfg, resolve=True))
    record = provenance(cfg, metrics, copy_plugin_sources(run_dir, folders))
    (run_dir / PROVENANCE_FILE).write_text(json.dumps(record, indent=2))


def write_hydra_files(run_dir: Path, cfg: DictConfig) -> None:
    """``.hydra/config.yaml``, ``hydra.yaml`` and ``overrides.yaml``: what Hydra writes before a job starts (under
    the name Hydra uses: users' habits keep working)."""
    from hydra.core.hydra_config import HydraConfig

    folder = run_dir / HYDRA_DIR
    folder.mkdir(exist_ok=True)
    (folder / "config.yaml").write_text(OmegaConf.to_yaml(cfg))
    if HydraConfig.initialized():
        hydra_cfg = HydraConfig.instance().cfg
        (folder / "hydra.yaml").write_text(OmegaConf.to_yaml(hydra_cfg))
        (run_dir / OVERRIDES_FILE).write_text(OmegaConf.to_yaml(hydra_cfg.hydra.overrides.task))


def loaded_plugin_folders() -> list[Path]:
    """Every plugin folder this process loaded (discovery exports each, absolute, to ``$ZOO_PLUGIN_DIRS``)."""
    from zoo.registry.discovery import env_folders

    return list(dict.fromkeys(env_folders()))


def copy_plugin_sources(run_dir: Path, folders: list[Path]) -> list[dict]:
    """Copy each folder's ``*.py`` files (what discovery imports) to ``plugins/<folder name>/``."""
    recorded = []
    for folder in folders:
        target = run_dir / PLUGINS_DIR / folder.name
        target.mkdir(parents=True, exist_ok=True)
        files = {}
        for source in sorted(folder.glob("*.py")):
            shutil.copy2(source, target / source.name)
            files[source.name] = hashlib.sha256(source.read_bytes()).hexdigest()
        recorded.append({"path": str(folder), "copy": f"{PLUGINS_DIR}/{folder.name}", "files": files})
    return recorded


@functools.cache
def _plugin_packages() -> tuple[tuple[str, str], ...]:
    """(module, distribution name) of every ``zoo.plugins`` entry point, read once per process as discovery reads
    them: each read scans every installed distribution (about 8 ms here, and a run asks for each component)."""
    return tuple(
        (ep.value, ep.dist.name) for ep in importlib.metadata.entry_points(group="zoo.plugins") if ep.dist is not None
    )


@functools.cache
def _packages_distributions() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


def _distribution(module: str) -> tuple[str | None, str | None]:
    """The installed distribution (name, version) that provides ``module``: an entry point's, else the top-level
    package's; (None, None) when none is known."""
    candidates = [dist for value, dist in _plugin_packages() if module == value or module.startswith(value + ".")]
    if not candidates:
        candidates = _packages_distributions().get(module.split(".")[0], [])
    for name in candidates:
        version = _version(name)
        if version is not None:
            return name, version
    return None, None


def component_origin(kind: str, name: str) -> dict:
    """Where the registered ``kind``/``name`` comes from: its module and package (with version) or plugin folder."""
    from zoo.registry import get

    module = get(kind, name).module
    origin: dict[str, Any] = {"kind": kind, "name": name, "module": module}
    parts = module.split(".")
    if module.startswith(FOLDERS_PACKAGE + ".") and len(parts) > 4:
        package = sys.modules.get(".".join(parts[:4]))
        folder = list(getattr(package, "__path__", []))
        origin.update(folder=folder[0] if folder else None, file=f"{parts[4]}.py")
    else:
        origin["package"], origin["version"] = _distribution(module)
    return origin


def used_components(cfg: Any, metrics: Iterable[str]) -> list[tuple[str, str, str]]:
    """(config group, kind, name) of every component the config uses: each kind's choice, each optional group
    that is set, and ``metrics``."""
    from zoo.registry import GROUP_KINDS

    used = []
    for kind in GROUP_KINDS:
        for group in kind.groups:
            chosen = cfg.get(group)
            if chosen is not None and chosen.get("name") is not None:
                used.append((group, kind.name, str(chosen["name"])))
    used += [("metrics", "metric", str(name)) for name in metrics]
    return used


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def provenance(cfg: Any, metrics: Iterable[str], folders: list[dict]) -> dict:
    """What ``provenance.json`` holds: versions, plugin folders and the origin of every component used."""
    import zoo

    return {
        "version": PROVENANCE_VERSION,
        "zoo": _version("zoo") or zoo.__version__,
        "python": platform.python_version(),
        "torch": _version("torch"),
        "lightning": _version("lightning"),
        "plugin_folders": folders,
        "components": [
            {"group": group, **component_origin(kind, name)} for group, kind, name in used_components(cfg, metrics)
        ],
    }


class PluginMissing(ZooError):
    """A run names a component that is not registered here."""


def load_run_plugins(run_dir: Path, cfg: Any) -> None:
    """Register every plugin the run in ``run_dir`` used, from wherever this process runs.

    The recorded plugin folders are loaded where they are; a folder that is gone is loaded from the run's
    copy of its sources (a warning says so). A component still missing is one error naming it, where it came
    from and how to get it.
    """
    from zoo.registry.discovery import discover, load_folder

    discover()  # entry points and $ZOO_PLUGIN_DIRS
    for recorded in cfg.get("plugin_dirs") or []:
        folder = Path(str(recorded)).expanduser()
        copy = run_dir / PLUGINS_DIR / folder.name
        if folder.is_dir():
            changed = [
                f.name
                for f in sorted(copy.glob("*.py"))
                if not (folder / f.name).is_file() or (folder / f.name).read_bytes() != f.read_bytes()
            ]
            if changed:
                log.warning(
                    "plugin folder %s has changed since the run was trained (%s); using it as it is now "
                    "(the run's copy is in %s)",
                    folder,
                    ", ".join(changed),
                    copy,
                )
            load_folder(folder)  # a relative folder (a run from before provenance) is read from here, as before
            continue
        if f"{FOLDERS_PACKAGE}.{folder.name}" in sys.modules:
            continue  # a folder of that name is loaded already ($ZOO_PLUGIN_DIRS): it was moved there
        if copy.is_dir():
            log.warning("plugin folder %s is gone; using the copy of its sources saved with the run (%s)", folder, copy)
            load_folder(copy)
    check_components(run_dir, cfg)


def check_components(run_dir: Path, cfg: Any) -> None:
    """One line for the first component of the run that is not registered here, saying how to get it."""
    from zoo.registry import names

    record_file = run_dir / PROVENANCE_FILE
    try:
        components = json.loads(record_file.read_text())["components"] if record_file.is_file() else None
    except (OSError, ValueError, KeyError):
        components = None
    if components is None:  # a run from before provenance.json: what its config names
        metrics = [m if isinstance(m, str) else m.get("name") for m in (cfg.get("metrics") or [])]
        metrics += [cfg.get("monitor")] if cfg.get("monitor") else []
        components = [{"group": g, "kind": k, "name": n} for g, k, n in used_components(cfg, metrics)]
    for component in components:
        kind, name = component["kind"], component["name"]
        if name in names(kind):
            continue
        raise PluginMissing(
            f"the run's {component.get('group', kind)} '{name}' is not registered here: "
            f"{_how_to_get(component, run_dir)}"
        )


def _how_to_get(component: dict, run_dir: Path) -> str:
    folder, file = component.get("folder"), component.get("file")
    if folder or file:
        copy = run_dir / PLUGINS_DIR / Path(str(folder)).name
        if folder and Path(folder).is_dir():
            return (
                f"it came from {file} in the plugin folder {folder}, which no longer registers it; "
                f"restore that file (the run's copy is in {copy})"
            )
        return (
            f"it came from {file} in the plugin folder {folder}, which is gone, and the run holds no copy "
            f"({copy}); put the folder back or name where it is now in $ZOO_PLUGIN_DIRS"
        )
    package, version = component.get("package"), component.get("version")
    if package:
        pinned = f"{package}=={version}" if version else package
        installed = _version(package)
        here = (
            f"{package} {installed} is installed here and does not register it"
            if installed
            else "which is not installed in this environment"
        )
        return f"it came from {component['module']} (package {package} {version or ''}), {here}; pip install '{pinned}'"
    if component.get("module"):
        return (
            f"it came from {component['module']}, which this environment cannot import; install its package "
            "or name its plugin folder in $ZOO_PLUGIN_DIRS"
        )
    return "install the package that provides it, or name its plugin folder in $ZOO_PLUGIN_DIRS"
