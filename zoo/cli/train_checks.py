"""``zoo train``'s command line checked before Hydra starts, so a mistake is one line and nothing is created.

Hydra's own flags and the values they take are read from Hydra's argument parser
(``hydra._internal.utils.get_args_parser``): a mistyped flag is answered with the closest one, a bad value with the
values allowed. Then every job's config is composed and checked as the job will check it before its data loads
(:func:`check_composition`), so a sweep stops before its first job.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from dataclasses import dataclass

from hydra._internal.utils import get_args_parser
from omegaconf import DictConfig, open_dict

from zoo.cli.train_asked import check_composed_as_asked, check_preset_sweep
from zoo.config.compose import compose_config
from zoo.config.overrides import CompositionError, parse_overrides
from zoo.config.suggest import did_you_mean, with_hint
from zoo.errors import ZooError

#: Hydra's modes, by the name its parser stores each under: a command line takes one of them.
HYDRA_MODES = ("multirun", "cfg", "info", "run", "shell_completion")
#: Hydra's flags that print something instead of running a job, by the name its parser stores each under.
PRINTING = ("help", "hydra_help", "cfg", "info", "shell_completion")
#: zoo's own flags, which stand before the command (``zoo --verbose train``).
ZOO_FLAGS = ("--verbose", "-v")


@dataclass(frozen=True)
class Flag:
    """One of Hydra's flags as its parser declares it: its spellings, the values it takes (None: any value; empty:
    none) and whether it may stand without one."""

    name: str
    spellings: tuple[str, ...]
    takes: tuple[str, ...] | None
    value_optional: bool

    @property
    def long(self) -> str:
        return max(self.spellings, key=len)


@functools.cache
def hydra_flags() -> dict[str, Flag]:
    """Every flag Hydra's command line takes, by each of its spellings."""
    flags = {}
    for action in get_args_parser()._actions:
        if not action.option_strings:
            continue  # the overrides
        takes = () if action.nargs == 0 else (tuple(action.choices) if action.choices else None)
        flag = Flag(action.dest, tuple(action.option_strings), takes, action.nargs == "?")
        flags.update(dict.fromkeys(action.option_strings, flag))
    return flags


def flag_named(name: str) -> Flag:
    """The flag Hydra's parser stores under ``name``."""
    return next(flag for flag in hydra_flags().values() if flag.name == name)


def spellings(*names: str) -> set[str]:
    """Every spelling of the flags Hydra's parser stores under ``names``."""
    return {spelling for name in names for spelling in flag_named(name).spellings}


def check_modes(overrides: list[str]) -> None:
    """Refuse a flag Hydra lacks, a value its flag does not take, and two of Hydra's modes at once (``-m --cfg
    job``), each in one line, before Hydra's parser prints its usage or raises a traceback."""
    check_flags(overrides)
    given = {arg.split("=")[0] for arg in overrides}
    modes = [flag_named(name).long for name in HYDRA_MODES if given & spellings(name)]
    if len(modes) > 1:
        raise ZooError(
            f"{' and '.join(modes)} cannot be given together; --cfg job (or --info) shows what a run "
            "composes: give it without -m, with the sweep's first values"
        )


def check_flags(arguments: list[str]) -> None:
    """Each flag must be one of Hydra's, with a value it takes; a mistyped one is answered with the closest."""
    flags = hydra_flags()
    for k, argument in enumerate(arguments):
        name, attached, value = argument.partition("=")
        if not name.startswith("-"):
            continue
        if name in ZOO_FLAGS:
            raise ZooError(f"{name} goes before the command: zoo {name} train ...")
        if name not in flags:
            refusal = with_hint(f"zoo train has no flag {name}", did_you_mean(name, [*flags, *ZOO_FLAGS]))
            raise ZooError(f"{refusal} (zoo train --help lists them)")
        flag = flags[name]
        if flag.takes:
            following = arguments[k + 1] if k + 1 < len(arguments) and not arguments[k + 1].startswith("-") else None
            check_flag_value(name, flag, value if attached else following)


def check_flag_value(given_as: str, flag: Flag, value: str | None) -> None:
    """``value`` must be one the flag takes; a flag whose value is optional (``--info``) may stand without one."""
    takes = flag.takes
    if value in takes or (value is None and flag.value_optional):
        return
    given = f"{given_as} {value}" if value else given_as
    refusal = with_hint(
        f"{given}: {given_as} takes one of {', '.join(takes)}", did_you_mean(value, takes) if value else ""
    )
    raise ZooError(f"{refusal} (e.g. zoo train {given_as} {takes[0]})")


def is_multirun(overrides: list[str]) -> bool:
    """Whether the command line runs Hydra's multirun (``-m``): a sweep, or a search."""
    return any(o in spellings("multirun") for o in overrides)


def prints_only(overrides: list[str]) -> bool:
    """Whether the command line asks Hydra to print something (help, the config, its info) instead of running a job."""
    return any(arg.split("=")[0] in spellings(*PRINTING) for arg in overrides)


def asks_for_help(overrides: list[str]) -> bool:
    """Whether the command line asks for Hydra's help (``--help``, ``--hydra-help``), which runs no job."""
    return any(arg.split("=")[0] in spellings("help", "hydra_help") for arg in overrides)


def is_search(overrides: list[str]) -> bool:
    """Whether the command line runs a search (``hydra/sweeper=optuna``), whose jobs are trials."""
    return any(o == f"hydra/sweeper={name}" for o in overrides for name in SWEEPER_PACKAGES)


def check_composition(overrides: list[str]) -> None:
    """Compose the config before Hydra does, and check it as each job will before its data loads, so a bad
    override is one line rather than Hydra's report, and a sweep stops before its first job.

    A sweep is checked value by value, each with the other overrides at their first value
    (``a=1,2 b=x,y`` as ``a=1 b=x``, ``a=2 b=x``, ``a=1 b=y``): every value a sweep names is
    composed and checked once before any job starts (:func:`check_job`).
    """
    if prints_only(overrides):
        return
    check_launcher(overrides)
    check_sweeper(overrides)
    parsed = parse_overrides([o for o in overrides if not o.startswith("-")])
    # Each override as key=value settings: a sweep's every value, a plain override as written.
    settings = [
        [f"{o.get_key_element()}={v}" for v in o.sweep_string_iterator()] if o.is_sweep_override() else [o.input_line]
        for o in parsed
    ]
    first = [choices[0] for choices in settings]
    composed = compose_config(first, hydra=True)
    check_preset_sweep(composed, overrides, is_multirun(overrides))
    checks = JobChecks(values=not is_search(overrides), machine=runs_here(overrides))
    with open_dict(composed):  # the first job's config, composed once
        del composed["hydra"]
    check_job(first, checks, composed)
    for k, choices in enumerate(settings):
        for setting in choices[1:]:
            check_job([*first[:k], setting, *first[k + 1 :]], checks)
    swept = [setting for o, setting in zip(parsed, first) if o.is_sweep_override()]
    if is_multirun(overrides) and swept:
        plain = [o.input_line for o in parsed if not o.is_sweep_override()]
        if is_search(overrides):  # a search gives Hydra its ranges as ++search.space.KEY, which fit any config
            from zoo.search.space import ranges_added

            plain = ranges_added(plain)
        check_sweep_base(plain, swept)


def composes(overrides: list[str]) -> bool:
    try:
        compose_config(overrides, hydra=True)
    except CompositionError:
        return False
    return True


def check_sweep_base(plain: list[str], swept: list[str]) -> None:
    """Hydra composes a sweep once with none of its swept values (``swept``: each at its first value here) before
    its first job, so an override that fits only a swept value (``decoder.prefix=none`` beside
    ``decoder=s4d,mamba``: set on the preset's decoder, which has no such field) fails there in Hydra's words
    although every job composes. Refused here in one line, naming the swept settings that the others need."""
    try:
        compose_config(plain, hydra=True)
    except CompositionError as error:
        keys = [setting.split("=", 1)[0] for setting in swept]
        needed = [key for key, setting in zip(keys, swept) if composes([*plain, setting])] or keys
        raise CompositionError(
            f"{error}; a sweep is first composed without its swept values ({', '.join(keys)}), and every other "
            f"override must fit that config too: sweep {' and '.join(needed)} one value a command instead"
        ) from None


@dataclass(frozen=True)
class JobChecks:
    """What :func:`check_job` checks besides composition and the keys: the values' ranges (left to a search,
    whose trials that fail are recorded as its results), and this machine (not where jobs run elsewhere)."""

    values: bool = True
    machine: bool = True


def check_job(overrides: list[str], checks: JobChecks, composed: DictConfig | None = None) -> None:
    """Compose one job's config (unless ``composed`` already) and check it as the job would before any data loads:
    every key is one the schema has, every value in range (:func:`zoo.training.preflight.validate`) and the
    trainer's devices here."""
    from zoo.config.machine import check_machine
    from zoo.config.schema import check_keys
    from zoo.registry.discovery import discover
    from zoo.registry.index import checkable
    from zoo.training.preflight import validate

    cfg = compose_config(overrides) if composed is None else composed
    if not checkable(cfg):  # a component composed from its defaults alone: its types are checked with its plugin
        discover()
        cfg = compose_config(overrides)
    check_composed_as_asked(cfg, overrides)
    if checks.values:
        validate(cfg)
    else:
        check_keys(cfg)
    if checks.machine:
        check_machine(cfg.trainer)


#: Launchers whose jobs run on other machines (SLURM's nodes): this machine's devices say nothing about theirs.
REMOTE_LAUNCHERS = ("slurm", "submitit_slurm")


def runs_here(overrides: list[str]) -> bool:
    """Whether the jobs run on this machine (not submitted to a cluster's other machines)."""
    return not any(o == f"hydra/launcher={name}" for o in overrides for name in REMOTE_LAUNCHERS)


#: The launcher plugins zoo's presets (conf/hydra/launcher) build on, by the config each registers: its pip name
#: and zoo's extra that installs it.
LAUNCHER_PLUGINS = {
    "joblib": ("hydra-joblib-launcher", "parallel"),
    "submitit_local": ("hydra-submitit-launcher", "slurm"),
    "submitit_slurm": ("hydra-submitit-launcher", "slurm"),
}


def check_launcher(overrides: list[str]) -> None:
    """A ``hydra/launcher`` whose plugin is not installed is one line naming zoo's extra for it, rather than
    Hydra's report on a config it cannot find; checked before the whole command line is composed."""
    chosen = [o for o in overrides if o.startswith("hydra/launcher=")]
    if not chosen:
        return
    try:
        compose_config(chosen[-1:])
    except CompositionError as error:
        missing = re.search(r"Could not (?:find|load) 'hydra/launcher/(\w+)'", str(error))
        if missing is None or missing.group(1) not in LAUNCHER_PLUGINS:
            raise
        package, extra = LAUNCHER_PLUGINS[missing.group(1)]
        raise CompositionError(
            f"{chosen[-1]} needs the Hydra launcher plugin {package}, which is not installed: "
            f"pip install 'zoo[{extra}]'"
        ) from None


#: The sweepers zoo's presets (conf/hydra/sweeper) select, by preset: the package each needs and zoo's extra for it.
SWEEPER_PACKAGES = {"optuna": ("optuna", "search")}


def check_sweeper(overrides: list[str]) -> None:
    """``hydra/sweeper=optuna`` without Optuna is one line naming zoo's extra; in a sweep (``-m``), the search is
    checked first (:func:`zoo.search.sweeper.check_search`: its settings, spaces, storage, and a resume against what
    it resumes), so a study without a space, a range that is not one, or another search in the sweep directory
    stops it before Hydra starts."""
    chosen = [o.split("=", 1)[1] for o in overrides if o.startswith("hydra/sweeper=")]
    if not chosen or chosen[-1] not in SWEEPER_PACKAGES:
        return
    package, extra = SWEEPER_PACKAGES[chosen[-1]]
    if importlib.util.find_spec(package) is None:
        raise CompositionError(
            f"hydra/sweeper={chosen[-1]} needs {package}, which is not installed: pip install 'zoo[{extra}]'"
        )
    if is_multirun(overrides):
        from zoo.search.sweeper import check_search

        check_search(overrides, compose_config)
