"""The typed schema of a run's whole config, derived from the declared kinds.

Every kind with a default (:data:`zoo.registry.kinds.GROUP_KINDS`) is a config
group, typed by the chosen plugin's own dataclass (the registry stores it), and
appears in the primary config's defaults list; so does each optional group of a
kind (:data:`zoo.registry.kinds.OPTIONAL_GROUPS`, e.g. ``cross_attention``), null
unless chosen. The plain sections come from :mod:`zoo.config.sections`.

:func:`check_keys` refuses a composed config's keys that the schema lacks: Hydra's
``+KEY=VALUE`` adds a key even to a typed section, which nothing would read.
"""

from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Any

from omegaconf import MISSING, DictConfig, OmegaConf

from zoo.config.checks import Choice, ConfigError
from zoo.config.overrides import fields_shown
from zoo.config.sections import (
    DataConfig,
    DecodeConfig,
    LoggerConfig,
    NetworkConfig,
    OptimConfig,
    ScstConfig,
    TrainerConfig,
)
from zoo.config.store import ConfigStore
from zoo.config.suggest import close_matches, with_hint
from zoo.registry.entries import PRESETS_CONFIG, store_preset_groups
from zoo.registry.index import config_class
from zoo.registry.kinds import GROUP_KINDS, OPTIONAL_GROUPS

#: Config groups that are not component kinds: presets of plain sections, composed after the kinds. (A component's
#: own presets, such as the Transformer decoder's ``kv_layout``, come with it: ``presets`` in zoo.contracts.)
PRESET_GROUPS = {
    "trainer": "cpu",
    "logger": "csv",
    "paths": "default",
    "search": None,
    "model": None,
}


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
    return ["_self_", *({group: choice} for group, choice in groups.items()), PRESETS_CONFIG, {"experiment": None}]


def section(cfg: Any, group: str) -> Any:
    """The config chosen in ``group``; an optional group left null gives its kind's
    (``cross_attention`` -> ``attention``)."""
    chosen = cfg.get(group)
    return cfg[OPTIONAL_GROUPS[group]] if chosen is None and group in OPTIONAL_GROUPS else chosen


ZooConfig = dataclasses.make_dataclass(
    "ZooConfig",
    [
        ("defaults", list[Any], field(default_factory=defaults_list)),
        *((kind.name, Any, MISSING) for kind in GROUP_KINDS),
        *((group, Any | None, field(default=None)) for group in OPTIONAL_GROUPS),
        ("seed", int, field(default=1234)),
        ("plugin_dirs", list[str], field(default_factory=list)),
        ("samples", int, field(default=10)),  # sample outputs written to the run directory
        # test items decoded one at a time, greedy and beam, to time them (summary.json's latency_ms); 0: not timed
        ("latency_items", int, field(default=32)),
        (
            "metrics",
            list[Any] | None,
            field(default=None),
        ),  # metric names or {name: ..., option: ...}; null: the task's
        (
            "monitor",
            str | None,
            field(default=None),
        ),  # the metric that picks checkpoints and stops early; null: the task's
        ("paths", Any, field(default_factory=dict)),
        # resume=RUN_DIR continues that run in its directory with its saved config (zoo.run.resume);
        # resume_mode: null means must with ``resume`` and never without it.
        ("resume", str | None, field(default=None)),
        ("resume_mode", ResumeMode | None, field(default=None)),
        # false: stop after training, the test split unseen (a search's trials; zoo.search); summary.json says so
        ("test", bool, field(default=True)),
        ("search", Any | None, field(default=None)),  # search=FAMILY: what hydra/sweeper=optuna tunes (conf/search)
        # A run directory (the weights its test scored) or a .ckpt file of the same task, data and network: the run
        # starts from its weights (zoo.training.init_from); a resumed run continues from its own last.ckpt instead.
        ("init_from", str | None, field(default=None)),
        ("data", DataConfig, field(default_factory=DataConfig)),
        ("network", NetworkConfig, field(default_factory=NetworkConfig)),
        ("optim", OptimConfig, field(default_factory=OptimConfig)),
        ("trainer", TrainerConfig, field(default_factory=TrainerConfig)),
        ("decode", DecodeConfig, field(default_factory=DecodeConfig)),
        ("scst", ScstConfig, field(default_factory=ScstConfig)),
        ("logger", LoggerConfig, field(default_factory=LoggerConfig)),
    ],
)
ZooConfig.__module__ = __name__
ZooConfig.__doc__ = "A run's whole config: one section per kind (and per optional group), plus the plain sections."

store_preset_groups()
ConfigStore.instance().store(name="zoo_schema", node=ZooConfig)

#: The plain sections (data, network, optim, trainer, decode, scst, logger) and their dataclasses.
PLAIN_SECTIONS: dict[str, type] = {
    f.name: f.type for f in dataclasses.fields(ZooConfig) if dataclasses.is_dataclass(f.type)
}
#: Where a user reads the options a section or the whole config has.
SHOWN_BY_CFG_JOB = "`zoo train --cfg job` shows the options"


def check_keys(cfg: DictConfig) -> None:
    """Refuse a key the schema lacks, naming the closest one it has, and a kind's group left without a choice.

    ``+attention.temprature=5`` composes (Hydra's ``+`` opens even a typed section), and the section's
    dataclass would refuse the key only when built; ``~encoder`` leaves the run without an encoder.
    """
    refuse_unknown(
        cfg, "", _field_names(ZooConfig), "zoo has no option", f"{SHOWN_BY_CFG_JOB}; to continue a run: resume=RUN_DIR"
    )
    for section, config_cls in PLAIN_SECTIONS.items():
        refuse_unknown(cfg[section], section, _field_names(config_cls), f"{section} has no field", SHOWN_BY_CFG_JOB)
    for kind in GROUP_KINDS:
        for group in kind.groups:
            if OmegaConf.is_missing(cfg, group):
                raise ConfigError(
                    f"~{group} leaves the run with no {kind.name}, and every run needs one; "
                    f"choose one with {group}=NAME (`zoo list {kind.name}` lists them)"
                )
            chosen = cfg[group]
            if chosen is not None:  # an optional group left null: the kind's own choice
                fields = _field_names(config_class(kind.name, chosen.name)) | {"name", "defaults"}
                refuse_unknown(
                    chosen,
                    group,
                    fields,
                    f"{group}={chosen.name} has no field",
                    fields_shown(kind.name, sorted(fields - {"name", "defaults"})),
                )


def refuse_unknown(node: DictConfig, section: str, known: set[str], refusal: str, where: str) -> None:
    """Refuse the first key of ``node`` (the config, or its ``section``) that is not ``known``:
    ``REFUSAL KEY; did you mean SECTION.CLOSEST? (WHERE)``."""
    unknown = [str(key) for key in node.keys() if key not in known]
    if not unknown:
        return
    prefix = f"{section}." if section else ""
    close = close_matches(unknown[0], known - {"name", "defaults"})
    hint = f"did you mean {prefix}{close[0]}?" if close else ""
    raise ConfigError(f"{with_hint(f'{refusal} {unknown[0]}', hint)} ({where})")


def _field_names(config_cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(config_cls)}
