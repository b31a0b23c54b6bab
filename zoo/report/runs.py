"""Runs as ``zoo compare`` sees them: read from run directories only, never from a live process."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from zoo.config.suggest import did_you_mean
from zoo.errors import ZooError
from zoo.training.layout import SUMMARY_FILE

#: The resolved config a run wrote, and the Hydra config with its group choices.
CONFIG_FILE = "config.yaml"
HYDRA_FILE = Path(".hydra") / "hydra.yaml"


class RunsNotFound(ZooError, FileNotFoundError):
    """A path given to compare or watch does not exist, or holds no run at all."""


class UnknownSetting(ZooError, ValueError):
    """``--by`` names a setting none of the runs has."""


@dataclass
class Run:
    """One run directory and its ``summary.json``.

    ``status`` is the summary's (``running``, ``finished``, ``failed``), ``old``
    for a summary written before summaries had a schema version, or
    ``unreadable`` for one that is damaged or half-written by an older zoo.
    """

    path: Path
    summary: dict

    @property
    def status(self) -> str:
        if not self.summary:
            return "unreadable"
        if "schema_version" not in self.summary:
            return "old"
        return self.summary.get("status", "finished")

    @property
    def seed(self) -> Any:
        return self.summary["seed"] if "seed" in self.summary else self.settings.get("seed")

    def score(self, metric: str) -> float | None:
        return self.summary.get("test", {}).get(metric, {}).get("score")

    @cached_property
    def config(self) -> dict:
        """The run's resolved ``config.yaml``; empty when it has none (or it cannot be read)."""
        return _read_yaml(self.path / CONFIG_FILE)

    @cached_property
    def settings(self) -> dict[str, Any]:
        """Every setting of the run by dotted key (see :func:`flatten`): from ``config.yaml``, else from
        what the summary records (its components and seed), so a run without its config still groups."""
        flat = flatten(self.config or self.summary.get("components", {}))
        if "seed" in self.summary:
            flat.setdefault("seed", self.summary["seed"])
        return flat

    @cached_property
    def choices(self) -> dict[str, Any]:
        """Hydra's choice in each config group (``model``, ``experiment``, ``trainer``): recorded in the summary,
        or for a run made before it was, read from Hydra's own record of the run."""
        if "choices" in self.summary:
            return self.summary["choices"]
        choices = _read_yaml(self.path / HYDRA_FILE).get("hydra", {}).get("runtime", {}).get("choices", {})
        return {group: choice for group, choice in choices.items() if not group.startswith("hydra/")}

    def setting(self, key: str) -> Any:
        """A config value (``optim.lr``, ``seed``), a component's name (``encoder``) or a group's choice (``model``)."""
        return self.settings[key] if key in self.settings else self.choices.get(key)


def flatten(values: dict, prefix: str = "") -> dict[str, Any]:
    """A nested config as dotted keys; a section's ``name`` is the section's own value (``encoder``: ``gru``,
    then ``encoder.hidden_size``), which is how a component is chosen on the command line."""
    flat: dict[str, Any] = {}
    for key, value in values.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict):
            if "name" in value:
                flat[dotted] = value["name"]
            flat.update(flatten({k: v for k, v in value.items() if k != "name"}, f"{dotted}."))
        else:
            flat[dotted] = value
    return flat


def _read_yaml(path: Path) -> dict:
    """A YAML file's mapping; empty when it is missing or damaged (the run still shows, without these settings)."""
    import yaml

    try:
        values = yaml.safe_load(path.read_text()) if path.is_file() else {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    return values if isinstance(values, dict) else {}


def check_settings(runs: list[Run], keys: list[str]) -> None:
    """Refuse a ``--by`` key no run has, naming the closest keys they do have."""
    known = {key for run in runs for key in run.settings}
    missing = [key for key in keys if key not in known]
    if missing:
        known |= {group for run in runs for group in run.choices}
    for key in missing:
        if key in known:
            continue
        hint = did_you_mean(key, sorted(known), n=3) or (
            "give a key of a run's config.yaml (seed, optim.lr, "
            "encoder.hidden_size) or a config group (encoder, model, experiment)"
        )
        raise UnknownSetting(f"--by {key}: no run has that setting; {hint}")


def find_runs(paths: list[str | Path]) -> list[Run]:
    """Every run directory at or below ``paths`` (a run, a sweep, a folder of sweeps), in path order.

    A run is its resolved directory: one reached twice (given twice, or a sweep and one of its jobs) counts once.
    """
    runs, seen = [], set()
    for path in existing(paths):
        files = [path / SUMMARY_FILE] if (path / SUMMARY_FILE).is_file() else sorted(path.rglob(SUMMARY_FILE))
        for file in files:
            if file.parent.resolve() in seen:
                continue
            seen.add(file.parent.resolve())
            try:
                summary = json.loads(file.read_text())
            except (OSError, json.JSONDecodeError):
                summary = {}
            runs.append(Run(file.parent, summary if isinstance(summary, dict) else {}))
    return runs


def existing(paths: list[str | Path]) -> list[Path]:
    """``paths`` as paths, each checked to exist (a mistyped folder is an error, not an empty comparison)."""
    missing = [str(path) for path in paths if not Path(path).exists()]
    if missing:
        raise RunsNotFound(
            f"no such file or folder: {', '.join(missing)}; give run directories or folders holding "
            "them (e.g. multirun/)"
        )
    return [Path(path) for path in paths]
