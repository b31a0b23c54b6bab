"""The one training entry: ``python -m zoo.training.entry OVERRIDES...`` (``zoo train`` calls :func:`main`).

:func:`main` makes this module the process's program: ``sys.argv`` becomes this file plus the
overrides and ``__main__.__spec__`` names this module, so Lightning's DDP launcher, which reruns
``python -m <__main__.__spec__.name> <sys.argv[1:]>``, reruns this entry, not the CLI. Every process
discovers plugins itself, before composing (command line) and again in the task (a pickled config).
Every job first claims its directory (:mod:`zoo.run.claim`): Hydra itself writes nothing there.
"""

from __future__ import annotations

import importlib.util
import logging
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from hydra.utils import to_absolute_path
from omegaconf import DictConfig

import zoo.config.schema  # noqa: F401  (stores the schema)
from hydra_plugins.zoo_optuna_sweeper.optuna_sweeper import ZooOptunaSweeper  # stores hydra/sweeper=zoo_optuna
from zoo.config.overrides import CompositionError, explain, parse_overrides
from zoo.config.presets import check_presets_not_repeated
from zoo.config.renamed import check_renamed
from zoo.config.suggest import did_you_mean, with_hint
from zoo.disk import DiskFullError, disk_full, free_bytes, size_text
from zoo.errors import ZooError, one_line_reason, report
from zoo.registry.discovery import discover
from zoo.training.ranks import follow_job, started_rank

log = logging.getLogger("zoo.run")


@contextmanager
def one_line_errors() -> Iterator[None]:
    """A ZooError ends the process with its message as one line; its text already says what to do. So does a disk
    that filled under any other write (a tokenizer, the run record, a log): the writers of large files say which
    file and how much it needed (:mod:`zoo.disk`), this says at least where."""
    try:
        yield
    except ZooError as error:
        report(error)
        raise SystemExit(1) from None
    except Exception as error:
        full = next((e for e in chain(error) if disk_full(e)), None)
        if full is None:
            raise
        where = Path(getattr(full, "filename", None) or job_folder())
        report(
            DiskFullError(
                f"no space left to write {where}: its disk has {size_text(free_bytes(where))} free; free some "
                "space or choose a folder on another disk, then run again"
            )
        )
        raise SystemExit(1) from None


def job_folder() -> Path:
    """The job's run directory once Hydra has made it, else the folder the command runs in."""
    try:
        return Path(HydraConfig.get().runtime.output_dir)
    except ValueError:  # no Hydra job yet
        return Path.cwd()


def chain(error: BaseException) -> Iterator[BaseException]:
    """``error`` and the errors it was raised while handling, newest first."""
    while error is not None:
        yield error
        error = error.__cause__ or error.__context__


def plugin_dirs_from_overrides(overrides: list[str]) -> list[str]:
    """The ``plugin_dirs=[...]`` override, read before Hydra composes anything (plugins must register first)."""
    candidates = [o for o in overrides if o.lstrip("+~").startswith("plugin_dirs=")]
    dirs: list[str] = []
    for override in parse_overrides(candidates):
        value = override.value()
        dirs.extend(value if isinstance(value, list) else [value])
    return [str(d) for d in dirs]


#: Run directories of the jobs of this process's sweep that failed (the others ran on).
FAILED_JOBS: list[str] = []


def train_job(cfg: DictConfig) -> float | None:
    """Train one job; return the monitored metric's best validation score, which is what a sweeper optimises.

    Never the test score: a sweeper that chose by it would tune on the test split. The best validation score
    is the one that chose the checkpoint (``summary.json``'s ``best_val``, in the metric's own direction).

    The job's directory is claimed before anything else (new or empty, locked from the job's first
    write until it ends; see :mod:`zoo.run.claim`), so a refused start changes nothing in it.
    In a sweep, a failed job is recorded as failed in its ``summary.json`` under that lock.
    """
    # Imported here: `--help`, `--cfg` and a sweep's launching process never need Lightning.
    from lightning.pytorch.utilities import rank_zero_only

    from zoo.run.claim import claim_run_dir
    from zoo.run.interruptions import RunInterrupted
    from zoo.run.resume import resume_mode

    run_dir = Path(HydraConfig.get().runtime.output_dir)
    writes = rank_zero_only.rank == 0  # DDP ranks > 0 run in rank 0's directory: they neither check nor write it
    with claim_run_dir(run_dir, writes, resume_mode(cfg)) as claim:
        try:
            discover([to_absolute_path(d) for d in cfg.plugin_dirs])
            from zoo.training.run import train

            return train(cfg).get("best_val")
        except BaseException as error:
            if not isinstance(error, Exception):  # an interruption (recorded as such) or an exit: nothing to add
                error.run_dir = str(run_dir)
                if isinstance(error, RunInterrupted):
                    error.hand_over()  # submitit's pre-emption signal: requeued (this process exits)
                raise
            if writes and HydraConfig.get().mode == RunMode.MULTIRUN:
                if not isinstance(error, ZooError):  # a bug, not a bad input: keep the traceback in the job's log
                    log.error("the job failed", exc_info=error)
                claim.acquire()  # locked already unless the config was refused
                record_refused_job(run_dir, one_line_reason(error))
            raise


@hydra.main(config_path="pkg://zoo.conf", config_name="config", version_base="1.3")
def task(cfg: DictConfig) -> float | None:
    """One job. A sweep worker gets ``cfg`` pickled, so it discovers ``cfg.plugin_dirs`` in :func:`train_job`.

    A single run stops at its first error. In a sweep a failed job is recorded as failed in its
    ``summary.json`` (with the reason) and the other jobs run on; a job refused its directory (one
    that holds a run or anything else, or that another process writes) is not recorded there: that
    directory is left as it was.
    """
    if HydraConfig.get().mode != RunMode.MULTIRUN:
        with one_line_errors():
            return train_job(cfg)
    from zoo.run.claim import RunDirRefused

    try:
        return train_job(cfg)
    except Exception as error:
        run_dir = Path(HydraConfig.get().runtime.output_dir)
        if isinstance(error, RunDirRefused):
            print(f"zoo: error: {error}; the sweep goes on", file=sys.stderr)
        else:
            print(
                f"zoo: error: the job in {run_dir} failed ({one_line_reason(error)}); the sweep goes on",
                file=sys.stderr,
            )
        FAILED_JOBS.append(str(run_dir))
        return None


def record_refused_job(run_dir: Path, reason: str) -> None:
    """A job refused before it started (a bad value at one point of a sweep) still leaves a failed summary.

    Called only while the job holds (has locked) its directory, so it was new or empty.
    """
    from zoo.run.identity import SCHEMA_VERSION
    from zoo.run.layout import SUMMARY_FILE
    from zoo.run.record import write_json_atomic

    if not (run_dir / SUMMARY_FILE).exists():
        overrides = list(HydraConfig.get().overrides.task)
        write_json_atomic(
            run_dir / SUMMARY_FILE,
            {"schema_version": SCHEMA_VERSION, "status": "failed", "reason": reason, "overrides": overrides},
        )


#: Hydra's modes, each with its spellings: a command line takes one of them.
HYDRA_MODES = {
    "--multirun": ("-m", "--multirun"),
    "--cfg": ("-c", "--cfg"),
    "--info": ("-i", "--info"),
    "--run": ("-r", "--run"),
    "--shell-completion": ("-sc", "--shell-completion"),
}

#: Flags that make Hydra print something instead of running a job; they are left to Hydra.
HYDRA_INFO_FLAGS = (
    "--help",
    "-h",
    "--hydra-help",
    *(flag for mode in ("--cfg", "--info", "--shell-completion") for flag in HYDRA_MODES[mode]),
)


#: Every flag Hydra's command line takes, each spelling -> the values it takes (None: any value, () no value).
HYDRA_FLAGS: dict[str, tuple[str, ...] | None] = {
    **dict.fromkeys(
        (
            "--help",
            "-h",
            "--hydra-help",
            "--version",
            "--resolve",
            "--run",
            "-r",
            "--multirun",
            "-m",
            "--shell-completion",
            "-sc",
        ),
        (),
    ),
    **dict.fromkeys(("--cfg", "-c"), ("job", "hydra", "all")),
    **dict.fromkeys(("--info", "-i"), ("all", "config", "defaults", "defaults-tree", "plugins", "searchpath")),
    **dict.fromkeys(
        (
            "--package",
            "-p",
            "--config-path",
            "-cp",
            "--config-name",
            "-cn",
            "--config-dir",
            "-cd",
            "--experimental-rerun",
        ),
        None,
    ),
}
#: zoo's own flags, which stand before the command (``zoo --verbose train``).
ZOO_FLAGS = ("--verbose", "-v")


def check_modes(overrides: list[str]) -> None:
    """Refuse a flag Hydra lacks, a value its flag does not take, and two of Hydra's modes at once (``-m --cfg
    job``), each in one line, before Hydra's parser prints its usage or raises a traceback."""
    check_flags(overrides)
    given = [
        mode for mode, spellings in HYDRA_MODES.items() if any(arg.split("=")[0] in spellings for arg in overrides)
    ]
    if len(given) > 1:
        raise ZooError(
            f"{' and '.join(given)} cannot be given together; --cfg job (or --info) shows what a run "
            "composes: give it without -m, with the sweep's first values"
        )


def check_flags(arguments: list[str]) -> None:
    """Each flag must be one of Hydra's, with a value it takes; a mistyped one is answered with the closest."""
    for k, argument in enumerate(arguments):
        flag, attached, value = argument.partition("=")
        if not flag.startswith("-"):
            continue
        if flag in ZOO_FLAGS:
            raise ZooError(f"{flag} goes before the command: zoo {flag} train ...")
        if flag not in HYDRA_FLAGS:
            refusal = with_hint(f"zoo train has no flag {flag}", did_you_mean(flag, [*HYDRA_FLAGS, *ZOO_FLAGS]))
            raise ZooError(f"{refusal} (zoo train --help lists them)")
        takes = HYDRA_FLAGS[flag]
        if takes:
            following = arguments[k + 1] if k + 1 < len(arguments) and not arguments[k + 1].startswith("-") else None
            check_flag_value(flag, value if attached else following, takes)


def check_flag_value(flag: str, value: str | None, takes: tuple[str, ...]) -> None:
    """``value`` must be one of ``takes``; ``--info`` may stand without one (last on the line, or before a flag)."""
    if value in takes or (value is None and flag in HYDRA_MODES["--info"]):
        return
    given = f"{flag} {value}" if value else flag
    refusal = with_hint(f"{given}: {flag} takes one of {', '.join(takes)}", did_you_mean(value, takes) if value else "")
    raise ZooError(f"{refusal} (e.g. zoo train {flag} {takes[0]})")


def check_composition(overrides: list[str]) -> None:
    """Compose the config before Hydra does, and check it as each job will before its data loads, so a bad
    override is one line rather than Hydra's report, and a sweep stops before its first job.

    A sweep is checked value by value, each with the other overrides at their first value
    (``a=1,2 b=x,y`` as ``a=1 b=x``, ``a=2 b=x``, ``a=1 b=y``): every value a sweep names is
    composed and checked once before any job starts (:func:`check_job`).
    """
    if any(arg.split("=")[0] in HYDRA_INFO_FLAGS for arg in overrides):
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
    checks = JobChecks(values=not is_search(overrides), machine=runs_here(overrides))
    check_job(first, checks)
    for k, choices in enumerate(settings):
        for setting in choices[1:]:
            check_job([*first[:k], setting, *first[k + 1 :]], checks)


@dataclass(frozen=True)
class JobChecks:
    """What :func:`check_job` checks besides composition and the keys: the values' ranges (left to a search,
    whose trials that fail are recorded as its results), and this machine (not where jobs run elsewhere)."""

    values: bool = True
    machine: bool = True


def check_job(overrides: list[str], checks: JobChecks) -> None:
    """Compose one job's config and check it as the job would before any data loads: every key is one the
    schema has, every value in range (:func:`zoo.config.validate.validate`) and the trainer's devices here."""
    from zoo.config.machine import check_machine
    from zoo.config.schema import check_keys
    from zoo.config.validate import validate

    cfg = compose_config(overrides)
    if checks.values:
        validate(cfg)
    else:
        check_keys(cfg)
    if checks.machine:
        check_machine(cfg.trainer)


def is_search(overrides: list[str]) -> bool:
    """Whether the command line runs a search (``hydra/sweeper=optuna``), whose jobs are trials."""
    return any(o == f"hydra/sweeper={name}" for o in overrides for name in SWEEPER_PACKAGES)


#: Launchers whose jobs run on other machines (SLURM's nodes): this machine's devices say nothing about theirs.
REMOTE_LAUNCHERS = ("slurm", "submitit_slurm")


def runs_here(overrides: list[str]) -> bool:
    """Whether the jobs run on this machine (not submitted to a cluster's other machines)."""
    return not any(o == f"hydra/launcher={name}" for o in overrides for name in REMOTE_LAUNCHERS)


#: The launcher plugins zoo's presets (zoo/conf/hydra/launcher) build on, by the config each registers: its pip name
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


#: The sweepers zoo's presets (zoo/conf/hydra/sweeper) select, by preset: the package each needs and zoo's extra for it.
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
    if any(o in HYDRA_MODES["--multirun"] for o in overrides):
        from zoo.search.sweeper import check_search

        check_search(overrides, compose_config)


def compose_config(overrides: list[str], hydra: bool = False) -> DictConfig:
    """The config ``overrides`` compose to (no Hydra job; with Hydra's own settings when ``hydra``); one that does not
    compose is a :class:`CompositionError`."""
    from hydra import compose, initialize_config_module
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    try:
        with initialize_config_module("zoo.conf", version_base="1.3"):
            return compose("config", overrides=overrides, return_hydra_config=hydra)
    except (HydraException, OmegaConfBaseException) as error:
        raise CompositionError(explain(error, overrides)) from None


def register_sweeper() -> None:
    """Register zoo's sweeper with Hydra. Hydra finds plugins by listing the ``hydra_plugins`` package, which
    misses zoo's in an editable install (setuptools maps it through an import hook that cannot be listed)."""
    from hydra.core.plugins import Plugins

    Plugins.instance().register(ZooOptunaSweeper)


def main(overrides: list[str] | None = None) -> None:
    """Train with Hydra ``overrides`` (default: this process's arguments).

    ``resume=RUN_DIR`` composes the run's own overrides with these (:func:`zoo.run.resume.resume_overrides`). A run
    stopped by SIGINT or SIGTERM (its ``last.ckpt`` written) ends the process with one line saying how
    to resume it, and exit status 128 + the signal's number.
    """
    from zoo.run.resume import resume_overrides

    if started_rank():
        follow_job()
    overrides = sys.argv[1:] if overrides is None else list(overrides)
    with one_line_errors():
        check_modes(overrides)
        check_renamed(overrides)
        check_presets_not_repeated(overrides)
        overrides = resume_overrides(overrides)
        discover(plugin_dirs_from_overrides(overrides))
        register_sweeper()
        check_composition(overrides)
        if is_search(overrides):
            from zoo.search.space import ranges_added

            overrides = ranges_added(overrides)
    sys.argv = [__file__, *overrides]
    sys.modules["__main__"].__spec__ = __spec__
    from zoo.run.interruptions import RunInterrupted

    try:
        task()
    except RunInterrupted as stop:
        if started_rank():  # stopped with its job, which says so (a failure would have Lightning end the job)
            raise SystemExit(0) from None
        run_dir = getattr(stop, "run_dir", None)
        how = getattr(stop, "continue_with", None)  # a search says how it goes on
        print(f"zoo: interrupted: {stop.what_next(Path(run_dir) if run_dir else None, how)}", file=sys.stderr)
        raise SystemExit(128 + stop.signum) from None
    if FAILED_JOBS:
        print(
            f"zoo: error: {len(FAILED_JOBS)} job(s) of the sweep failed: {', '.join(FAILED_JOBS)}; "
            "their summary.json says why",
            file=sys.stderr,
        )
        raise SystemExit(1)


if __name__ == "__main__":
    main()
