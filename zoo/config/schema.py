"""The typed schema of a run's whole config, derived from the declared kinds.

Every kind with a default (:data:`zoo.registry.kinds.GROUP_KINDS`) is a config
group, typed by the chosen plugin's own dataclass (the registry stores it), and
appears in the primary config's defaults list; so does each optional group of a
kind (:data:`zoo.registry.kinds.OPTIONAL_GROUPS`, e.g. ``cross_attention``), null
unless chosen. The plain sections come from :mod:`zoo.config.sections`.
"""
from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Any, List, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from zoo.config.checks import Choice
from zoo.config.sections import DataConfig, DecodeConfig, LoggerConfig, ModelConfig, OptimConfig, TrainerConfig
from zoo.registry.kinds import GROUP_KINDS, OPTIONAL_GROUPS

#: Config groups that are not component kinds: presets of plain sections, composed after the kinds.
#: ``kv_layout`` (null unless chosen) sets the Transformer encoder's and decoder's key/value layout.
PRESET_GROUPS = {"trainer": "cpu", "logger": "csv", "paths": "default", "kv_layout": None, "search": None, "model": None}


class ResumeMode(Choice):
    """Whether a job continues the run already in its directory (``resume_mode``)."""

    never = "never"  # the directory must be new or empty (the default without ``resume``)
    auto = "auto"  # continue a run that did not finish, skip one that did, start one where there is none
    must = "must"  # continue the run there from checkpoints/last.ckpt (a finished one too: e.g. more epochs)


def defaults_list() -> list[Any]:
    """The schema's own values first, then one default per kind, optional and preset group, then an optional experiment.

    Kinds that choose other kinds' defaults (the task) come after those kinds: Hydra lets a
    config override only choices already in the list.
    """
    kinds = sorted(GROUP_KINDS, key=lambda kind: kind.chooses_defaults)  # stable: declared order otherwise
    groups = {kind.name: kind.default for kind in kinds} | dict.fromkeys(OPTIONAL_GROUPS) | PRESET_GROUPS
    return ["_self_", *({group: choice} for group, choice in groups.items()), {"experiment": None}]


def section(cfg: Any, group: str) -> Any:
    """The config chosen in ``group``; an optional group left null gives its kind's (``cross_attention`` -> ``attention``)."""
    chosen = cfg.get(group)
    return cfg[OPTIONAL_GROUPS[group]] if chosen is None and group in OPTIONAL_GROUPS else chosen


ZooConfig = dataclasses.make_dataclass(
    "ZooConfig",
    [
        ("defaults", List[Any], field(default_factory=defaults_list)),
        *((kind.name, Any, MISSING) for kind in GROUP_KINDS),
        *((group, Optional[Any], field(default=None)) for group in OPTIONAL_GROUPS),
        ("seed", int, field(default=1234)),
        ("plugin_dirs", List[str], field(default_factory=list)),
        ("samples", int, field(default=10)),  # sample outputs written to the run directory
        ("metrics", Optional[List[Any]], field(default=None)),  # metric names or {name: ..., option: ...}; null: the task's
        ("monitor", Optional[str], field(default=None)),  # the metric that picks checkpoints and stops early; null: the task's
        ("paths", Any, field(default_factory=dict)),
        # resume=RUN_DIR continues that run in its directory with its saved config (zoo.training.rundir);
        # resume_mode: null means must with ``resume`` and never without it.
        ("resume", Optional[str], field(default=None)),
        ("resume_mode", Optional[ResumeMode], field(default=None)),
        # false: stop after training, the test split unseen (a search's trials; zoo.search); summary.json says so
        ("test", bool, field(default=True)),
        ("search", Optional[Any], field(default=None)),  # search=FAMILY: what hydra/sweeper=optuna tunes (conf/search)
        ("data", DataConfig, field(default_factory=DataConfig)),
        ("model", ModelConfig, field(default_factory=ModelConfig)),
        ("optim", OptimConfig, field(default_factory=OptimConfig)),
        ("trainer", TrainerConfig, field(default_factory=TrainerConfig)),
        ("decode", DecodeConfig, field(default_factory=DecodeConfig)),
        ("logger", LoggerConfig, field(default_factory=LoggerConfig)),
    ],
)
ZooConfig.__module__ = __name__
ZooConfig.__doc__ = "A run's whole config: one section per kind (and per optional group), plus the plain sections."

ConfigStore.instance().store(name="zoo_schema", node=ZooConfig)
