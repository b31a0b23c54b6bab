"""Who a run is among others: the identity ``summary.json`` opens with, and the settings outside it.

``config_key`` hashes the resolved config without the settings that do not change what a run computes
(:data:`RECORDING_SETTINGS`) and without ``seed``, so the seeds of one configuration share one key and
``zoo compare`` groups them; a resumed run may change the same settings (``zoo.run.resume``).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from zoo.config.schema import section
from zoo.registry import GROUP_KINDS

SCHEMA_VERSION = 1
#: Settings that do not change what a run computes: where it reads and writes, what it logs and shows, how a job
#: resumes it and whether it tests. Runs that differ only here are the same run recorded differently; a resumed
#: run may change them (zoo.run.resume.RESUME_MAY_CHANGE).
RECORDING_SETTINGS = (
    "resume",
    "resume_mode",
    "plugin_dirs",
    "paths",
    "samples",
    "latency_items",
    "logger",
    "data.num_workers",
    "data.prepare",
    "test",
    "search",
    "trainer.checkpoint_every_minutes",
    "trainer.log_every_n_steps",
    "trainer.enable_progress_bar",
    "trainer.cpu_threads",
)
#: Settings outside a run's ``config_key``: those above, and ``seed``, so the seeds of one configuration share one.
NOT_IN_CONFIG_KEY = ("seed", *RECORDING_SETTINGS)


def flat(values: Any, prefix: str = "") -> dict[str, Any]:
    """Nested config values as dotted keys (``{"optim": {"lr": 1}}`` -> ``{"optim.lr": 1}``)."""
    if isinstance(values, dict) and values:
        flattened: dict[str, Any] = {}
        for key, value in values.items():
            flattened.update(flat(value, f"{prefix}{key}."))
        return flattened
    return {prefix[:-1]: values}


def config_key(cfg: DictConfig, leaving_out: tuple[str, ...] = ()) -> str:
    """A short hash of the resolved config without seed, paths and logging: equal for the seeds of one configuration
    (and, ``leaving_out`` more settings, for the runs that differ only in those)."""
    values = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    for dotted in (*NOT_IN_CONFIG_KEY, *leaving_out):
        *parents, leaf = dotted.split(".")
        section = values
        for parent in parents:
            section = section.get(parent, {})
        section.pop(leaf, None)
    return hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()[:12]


def run_identity(cfg: DictConfig, monitor: str) -> dict:
    """What identifies a run among others: its configuration, seed, the overrides that made it and the choice in
    each config group (``model``, ``experiment``: what ``zoo compare --by`` groups by, though no key holds it)."""
    hydra = HydraConfig.get() if HydraConfig.initialized() else None
    choices = OmegaConf.to_container(hydra.runtime.choices) if hydra else {}
    return {
        "schema_version": SCHEMA_VERSION,
        "task": cfg.task.name,
        "monitor": monitor,
        "seed": cfg.seed,
        "config_key": config_key(cfg),
        "overrides": list(hydra.overrides.task) if hydra else [],
        "choices": {group: choice for group, choice in choices.items() if not group.startswith("hydra/")},
        "components": {  # each kind's choice, and what each optional group used (its kind's choice when left null)
            group: OmegaConf.to_container(section(cfg, group), enum_to_str=True)
            for kind in GROUP_KINDS
            for group in kind.groups
        },
    }
