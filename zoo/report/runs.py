"""Runs as ``zoo compare`` sees them: read from run directories only, never from a live process."""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from zoo.config.suggest import did_you_mean
from zoo.errors import ZooError
from zoo.run.claim import lock_held
from zoo.run.layout import LOCK_FILE, METRICS_FILE, SUMMARY_FILE

#: The resolved config a run wrote, and the Hydra config with its group choices.
CONFIG_FILE = "config.yaml"
HYDRA_FILE = Path(".hydra") / "hydra.yaml"
#: The columns of ``metrics.csv`` that place a row (when it was logged) rather than measure something.
PLACING_COLUMNS = ("step", "epoch")
#: A validation's fields in ``summary.json`` that are not scores.
VALIDATION_PLACE = ("epoch", "step", "seconds")

#: A logged quantity's points: (step, value) in the order they were logged.
Curve = list[tuple[float, float]]


class RunsNotFound(ZooError, FileNotFoundError):
    """A path given to compare or watch does not exist, or holds no run at all."""


class UnknownSetting(ZooError, ValueError):
    """``--by`` names a setting none of the runs has."""


@dataclass
class Run:
    """One run directory and its ``summary.json``.

    ``status`` is the summary's (``running``, ``finished``, ``failed``, ``interrupted``), ``old``
    for a summary written before summaries had a schema version, or
    ``unreadable`` for one that is damaged or half-written by an older zoo.
    """

    path: Path
    summary: dict

    @cached_property
    def status(self) -> str:
        """The summary's status, except ``killed`` for a run it calls running that no process holds the lock of:
        it ended without recording how (SIGKILL, out of memory, a lost node). Read once per reading of the runs."""
        if not self.summary:
            return "unreadable"
        if "schema_version" not in self.summary:
            return "old"
        status = self.summary.get("status", "finished")
        return "killed" if status == "running" and not lock_held(self.path / LOCK_FILE) else status

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

    def curves(self) -> dict[str, Curve]:
        """Everything the run logged, read now (:func:`read_metrics`), plus each validation score only its summary
        holds (a run without ``metrics.csv``) as ``val/<metric>``."""
        curves = read_metrics(self.path)
        recorded: dict[str, Curve] = {}
        for validation in self.summary.get("validations", []):
            for name, value in validation.items():
                if name not in VALIDATION_PLACE and _finite(value) and f"val/{name}" not in curves:
                    recorded.setdefault(f"val/{name}", []).append((validation.get("step", 0), float(value)))
        return curves | recorded

    def clock(self) -> Curve:
        """(step, seconds since training began) at each validation the summary records."""
        return [
            (validation["step"], float(validation["seconds"]))
            for validation in self.summary.get("validations", [])
            if _finite(validation.get("step")) and _finite(validation.get("seconds"))
        ]


def read_metrics(folder: Path) -> dict[str, Curve]:
    """Every numeric column of the run's ``metrics.csv`` (whatever it logged: ``train/loss``, ``val/bleu``) as its
    points. A last line still being written is left for the next read; a value that is not a finite number is
    left out (a chart has no place for it)."""
    try:
        text = (folder / METRICS_FILE).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    curves: dict[str, Curve] = {}
    for row in csv.DictReader(io.StringIO(text[: text.rfind("\n") + 1])):
        step = _number(row.get("step"))
        if step is None:
            continue
        for column, cell in row.items():
            value = _number(cell) if isinstance(cell, str) else None
            if column not in PLACING_COLUMNS and column is not None and value is not None:
                curves.setdefault(column, []).append((step, value))
    return curves


def logged_place(folder: Path) -> dict[str, float]:
    """The epoch and step of the last complete row of the run's ``metrics.csv`` (empty before its first row): a
    running run's progress from its first logged step, long before its first validation writes the summary's."""
    try:
        text = (folder / METRICS_FILE).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    lines = text[: text.rfind("\n") + 1].splitlines()
    if len(lines) < 2:
        return {}
    row = next(csv.DictReader([lines[0], lines[-1]]), {})
    return {column: value for column in PLACING_COLUMNS if (value := _number(row.get(column))) is not None}


def _number(text: str | None) -> float | None:
    try:
        value = float(text) if text else None
    except ValueError:
        return None
    return value if _finite(value) else None


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


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
    files = [Path(path) for path in paths if not Path(path).is_dir()]
    if files:
        raise RunsNotFound(
            f"{files[0]} is a file; give the run directory that holds it ({files[0].parent}), or a folder of runs"
        )
    return [Path(path) for path in paths]
