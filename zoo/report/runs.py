"""Runs as ``zoo compare`` sees them: read from run directories only, never from a live process."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zoo.errors import ZooError
from zoo.training.record import SUMMARY_FILE


class RunsNotFound(ZooError, FileNotFoundError):
    """A path given to compare or watch does not exist, or holds no run at all."""


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

    def score(self, metric: str) -> float | None:
        return self.summary.get("test", {}).get(metric, {}).get("score")

    def component(self, kind: str) -> str | None:
        return self.summary.get("components", {}).get(kind, {}).get("name")

    def setting(self, key: str) -> Any:
        """A component name (``encoder``) or any dotted config value (``encoder.hidden_size``) of the run."""
        if "." not in key:
            return self.component(key)
        value: Any = self.summary.get("components", {})
        for part in key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return value

    @property
    def label_overrides(self) -> list[str]:
        """The overrides that made this run, without its seed and output paths: what names its configuration."""
        return [o for o in self.summary.get("overrides", []) if not o.startswith(("seed=", "hydra.", "+hydra."))]


def find_runs(paths: list[str | Path]) -> list[Run]:
    """Every run directory at or below ``paths`` (a run, a sweep, a folder of sweeps), in path order."""
    runs = []
    for path in existing(paths):
        files = [path / SUMMARY_FILE] if (path / SUMMARY_FILE).is_file() else sorted(path.rglob(SUMMARY_FILE))
        for file in files:
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
        raise RunsNotFound(f"no such file or folder: {', '.join(missing)}; give run directories or folders holding "
                           "them (e.g. multirun/)")
    return [Path(path) for path in paths]
