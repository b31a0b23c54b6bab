"""``zoo train``: Hydra overrides in, one training job (or a sweep) out; ``python -m zoo.cli.train OVERRIDES...`` is
the same program.

:func:`main` checks the command line before Hydra starts (:mod:`zoo.cli.train_checks`), discovers the plugins it
names, then makes this module the process's program: ``sys.argv`` becomes this file plus the overrides and
``__main__.__spec__`` names this module, so Lightning's DDP launcher, which reruns ``python -m
<__main__.__spec__.name> <sys.argv[1:]>``, reruns it. Hydra then runs each job (:func:`task`) in its run folder
(:func:`zoo.run.job.run_job`: the claim, the signals, the record's ending) with :func:`zoo.training.train.train`.
Hydra itself writes nothing into a run's folder.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import hydra
from omegaconf import DictConfig

import zoo.config.schema  # noqa: F401  (stores the schema)
from hydra_plugins.zoo_optuna_sweeper.optuna_sweeper import ZooOptunaSweeper  # stores hydra/sweeper=zoo_optuna
from zoo.cli.train_asked import check_asked
from zoo.cli.train_checks import check_composition, check_modes, is_multirun, is_search, prints_only
from zoo.config.compose import plugin_dirs_from_overrides
from zoo.config.machine import kernels_switched_on
from zoo.config.presets import check_presets_not_repeated
from zoo.config.renamed import check_renamed
from zoo.disk import full_disk
from zoo.errors import ZooError, report
from zoo.registry.discovery import discover
from zoo.registry.index import store_configs
from zoo.run.ranks import follow_job, started_rank


def run(overrides: list[str], description: str) -> None:
    """Hydra parses ``overrides`` and prints its own ``--help``, so ``description`` is not used here."""
    main(overrides)


@hydra.main(config_path="pkg://zoo.conf", config_name="config", version_base="1.3")
def task(cfg: DictConfig) -> float | None:
    """One job; its monitored metric's best validation score, which is what a sweeper optimises (None: the job failed
    in a sweep, which goes on).

    Never the test score: a sweeper that chose by it would tune on the test split. The best validation score
    is the one that chose the checkpoint (``summary.json``'s ``best_val``, in the metric's own direction).
    """
    # Imported here, where a job runs: a refused flag never loads Lightning.
    from zoo.run.job import run_job
    from zoo.training.train import train

    summary = run_job(cfg, train)
    return None if summary is None else summary.get("best_val")


@contextmanager
def one_line_errors() -> Iterator[None]:
    """A command line refused, or a disk that filled while it was checked, ends the process with one line."""
    try:
        yield
    except Exception as error:
        said = error if isinstance(error, ZooError) else full_disk(error, Path.cwd())
        if said is None:
            raise
        report(said)
        raise SystemExit(1) from None


def checked(overrides: list[str]) -> list[str]:
    """The overrides the jobs run with, checked (:mod:`zoo.cli.train_checks`, and against what Hydra will do with
    them: :mod:`zoo.cli.train_asked`): with ``resume=RUN_DIR``, the run's own overrides first
    (:func:`zoo.run.resume.resume_overrides`); in a search, each range a setting allows."""
    from zoo.run.resume import resume_overrides

    check_modes(overrides)
    kernels_switched_on()  # $ZOO_CPU_KERNELS is on or off: a typo is one line now, not in the first training step
    check_renamed(overrides)
    check_presets_not_repeated(overrides)
    given, overrides = overrides, resume_overrides(overrides)
    folders = plugin_dirs_from_overrides(overrides)
    if folders:
        discover(folders)
    else:
        store_configs()  # the registry's cached index: the plugins are imported once a check needs them (torch)
    register_sweeper()
    check_asked(given, is_multirun(given))
    check_composition(overrides)
    if not prints_only(overrides):
        discover(folders)  # the jobs build the components: every plugin imported, once the command line has passed
    if is_search(overrides):
        from zoo.search.space import ranges_added

        overrides = ranges_added(overrides)
    return overrides


def say_sweep_cost(overrides: list[str]) -> None:
    """A sweep of more than a few runs says how many and how long they take here before it launches
    (:mod:`zoo.cli.sweep_cost`); a search's trials are its own business (``hydra.sweeper.trials``)."""
    from zoo.cli.sweep_cost import A_FEW, sweep_cost

    if not is_multirun(overrides) or is_search(overrides) or prints_only(overrides):
        return
    cost = sweep_cost(overrides)
    if cost.runs > A_FEW:
        print(f"zoo: this sweep launches {cost.says()}", file=sys.stderr, flush=True)


def register_sweeper() -> None:
    """Register zoo's sweeper with Hydra. Hydra finds plugins by listing the ``hydra_plugins`` package, which
    misses zoo's in an editable install (setuptools maps it through an import hook that cannot be listed)."""
    from hydra.core.plugins import Plugins

    Plugins.instance().register(ZooOptunaSweeper)


def main(overrides: list[str] | None = None) -> None:
    """Train with Hydra ``overrides`` (default: this process's arguments).

    A run stopped by SIGINT or SIGTERM (its ``last.ckpt`` written) ends the process with one line saying how
    to resume it, and exit status 128 + the signal's number; a sweep whose jobs failed ends with one line naming them.
    """
    if started_rank():
        follow_job()
    overrides = sys.argv[1:] if overrides is None else list(overrides)
    with one_line_errors():
        overrides = checked(overrides)
        say_sweep_cost(overrides)
    sys.argv = [__file__, *overrides]
    sys.modules["__main__"].__spec__ = __spec__
    if prints_only(overrides):  # Hydra prints and runs no job: nothing of Lightning is needed
        task()
        return
    from zoo.run.interruptions import RunInterrupted
    from zoo.run.job import FAILED_JOBS

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
