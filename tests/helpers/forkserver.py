"""What the fork server of :mod:`helpers.processes` imports once, before it forks any command: torch, Lightning,
Hydra and its plugins (launchers, sweepers), every module of zoo, the built-in plugins (the ``zoo.plugins`` entry
points) and the study storage's SQLAlchemy and Alembic (a search opens it). A forked ``zoo`` command starts where a
fresh one would be once it had imported what it needs; plugin folders and other entry points it finds itself."""

import importlib
import pkgutil

import lightning.pytorch  # noqa: F401
from hydra.core.plugins import Plugins

import zoo
from zoo.registry import discovery

discovery.load_entry_points()
Plugins.instance()  # Hydra scans hydra_plugins once
for module in pkgutil.walk_packages(zoo.__path__, "zoo."):
    if not module.name.endswith("__main__"):
        try:
            importlib.import_module(module.name)
        except ImportError:  # a module of an extra that is not installed: the command that needs it says so
            pass
for module in ("sqlalchemy.orm", "alembic.script", "alembic.migration"):  # what Optuna's RDBStorage imports late
    try:
        importlib.import_module(module)
    except ImportError:  # zoo[search] is not installed
        pass
