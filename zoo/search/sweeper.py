"""The search behind ``hydra/sweeper=optuna``: one Optuna study per family, equal budgets, resumable.

Each study (one combination of the command line's comma lists; :mod:`zoo.search.space`) asks Optuna
(Akiba et al., 2019) for trials through its ask/tell interface, so Hydra's launcher runs them as ordinary
zoo jobs, until its budget is spent: ``trials`` done (completed or failed), ``minutes`` of its jobs' wall
time or ``flops`` of training compute its trials recorded (:mod:`zoo.training.compute`; a trial under way
then finishes): trials that tune widths or epochs differ in compute, so equal trials need not be equal
compute. A trial runs with ``test=false``, so no search ever sees the test split, and its objective is the
monitored metric's best validation score (:func:`zoo.cli.train.task`). A trial that fails is told
to Optuna as failed and the search goes on. Then the study's best trial runs again once per seed of
``reseed``, with the test split: ordinary runs that ``zoo compare`` groups as one configuration (``search``
and ``test`` stay out of the ``config_key``).

Every study lives in the search's storage (:mod:`zoo.search.storage`: by default the journal file
:data:`zoo.search.STUDY_FILE` in the sweep directory), which also keeps the job number (the job's subdirectory)
of every trial and re-run and the worker that took it. The same command with ``hydra.sweep.dir=S
resume_mode=auto`` therefore resumes a search: finished trials stay as they are, a trial that was running
runs again with its values in its own directory (continued from its ``last.ckpt``; in a new directory when it
stopped before its first checkpoint), and the budget counts what is done. Run while the search runs, the same
command is a second worker: several processes share one search, taking ``n_jobs`` trials at a time each, and the
budget is the search's, not each worker's (:mod:`zoo.search.workers`). Each job records its place in the
search as overrides outside the ``config_key`` (``+search.study``, ``+search.trial``, ``+search.role``,
``+search.direction``), which :mod:`zoo.search.report` reads back.

A resumed search is the same search: each study is made with what defines it (:data:`DEFINITION`, a study
attribute: its family, the monitored metric and direction, the overrides that change what a trial computes, the
space, the budget's kind and the sampler), and a command whose studies or definitions differ from those its
storage holds is refused in one line naming the setting, before Hydra starts (:func:`check_search`): trials of
chrF beside trials of BLEU, or an LSTM in a GRU's study, would make its best trial and curves meaningless.
"""

from __future__ import annotations

import json
import logging
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict

from zoo.config.overrides import parse_overrides
from zoo.errors import ZooError, one_line_reason, report
from zoo.registry.discovery import discover
from zoo.run.claim import lock_held
from zoo.run.identity import RECORDING_SETTINGS
from zoo.run.layout import LOCK_FILE
from zoo.search.space import (
    SINGLE_STUDY,
    SearchError,
    as_overrides,
    fixed_keys,
    grid,
    override_keys,
    quoted,
    range_text,
    read_space,
    study_name,
)
from zoo.search.storage import open_storage, stored_search
from zoo.search.workers import Worker, turn

log = logging.getLogger("zoo.search")

#: The budget when none of ``trials``, ``minutes`` and ``flops`` is given.
DEFAULT_TRIALS = 20
SAMPLERS = ("tpe", "random")
#: The kinds of budget (``hydra.sweeper.*``); a study's is those set.
BUDGETS = ("trials", "minutes", "flops")
#: The study attribute that holds what defines the study (:meth:`Search.definition`).
DEFINITION = "definition"
#: Settings outside a study's definition: those that do not change what a trial computes, and the monitor, which
#: the definition holds on its own.
NOT_DEFINING = (*RECORDING_SETTINGS, "monitor")
#: How every refusal to go on with another search ends.
NEW_DIR = "or choose a new hydra.sweep.dir"
#: Seconds a worker waits, with nothing to start, while other workers' jobs run (one may need taking over).
WAIT_S = 1.0
#: What the study records as a re-run's worker once it has run.
DONE = "done"


@dataclass
class Study:
    """What one study searches: its name, every job's overrides, the space and the monitored metric's direction."""

    name: str
    overrides: list[str]
    space: dict[str, Any]
    monitor: str
    direction: str  # maximize | minimize (Optuna's words)


@dataclass
class Batch:
    """Jobs ready to launch: each job's key in the study, in order; the numbered ones' overrides; the results known
    before any runs (None: a job whose values do not compose)."""

    keys: list[str]
    numbered: list[tuple[int, str, list[str]]]
    results: dict[str, float | None]


class Search:
    """Runs a search's studies one after the other through Hydra's launcher (see the module's text).

    The Hydra plugin ``hydra_plugins.zoo_optuna_sweeper`` holds one and hands it ``setup`` and ``sweep``.
    """

    def __init__(
        self,
        trials: int | None = None,
        minutes: float | None = None,
        flops: float | None = None,
        reseed: list[int] | None = None,
        sampler: str = "random",
        seed: int = 0,
        n_jobs: int = 1,
        storage: str | None = None,
    ) -> None:
        self.trials = DEFAULT_TRIALS if trials is None and minutes is None and flops is None else trials
        self.minutes, self.flops, self.reseed = minutes, flops, [int(s) for s in (reseed or [])]
        self.job_dirs: dict[str, Path] = {}  # each launched job's directory, by its key in the study
        self.sampler_name, self.seed, self.n_jobs, self.storage_url = str(sampler), seed, n_jobs, storage

    def check(self) -> None:
        """Refuse settings out of range (a :class:`SearchError` naming each)."""
        problems = [
            f"hydra.sweeper.{name}={value} must be {rule}"
            for name, value, rule, ok in (
                ("trials", self.trials, ">= 1, or null with minutes", self.trials is None or self.trials >= 1),
                ("minutes", self.minutes, "> 0 and finite, or null with trials", spendable(self.minutes)),
                ("flops", self.flops, "> 0 and finite, or null with trials", spendable(self.flops)),
                ("n_jobs", self.n_jobs, ">= 1", self.n_jobs >= 1),
                ("sampler", self.sampler_name, f"one of {', '.join(SAMPLERS)}", self.sampler_name in SAMPLERS),
            )
            if not ok
        ]
        if problems:
            raise SearchError("; ".join(problems))

    def setup(self, *, hydra_context: Any, task_function: Any, config: DictConfig) -> None:
        from hydra.core.plugins import Plugins

        self.hydra_context, self.config = hydra_context, config
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=hydra_context, task_function=task_function, config=config
        )

    def sweep(self, arguments: list[str]) -> None:
        """Run every study of the command line (``arguments``: its overrides), then print what they found.

        A study that cannot start is one line before any job runs. A stop (Ctrl-C, SIGTERM) leaves the
        storage as it was and says how to continue.
        """
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        try:
            self.check()
            base, combinations = grid(arguments)
            studies = [read_study(base, combination, self.compose) for combination in combinations]
            sweep_dir.mkdir(parents=True, exist_ok=True)
            self.storage = open_storage(self.storage_url, sweep_dir)
            with turn(sweep_dir):
                stored = self.open_studies(studies, sweep_dir)
                OmegaConf.save(self.config, sweep_dir / "multirun.yaml")  # as Hydra's sweepers do: the sweep's config
        except ZooError as error:
            report(error)
            raise SystemExit(1) from None
        self.sweep_dir, self.worker = sweep_dir, Worker(sweep_dir)
        continue_with = f"the same command with hydra.sweep.dir={sweep_dir} resume_mode=auto"
        try:
            for study in studies:
                self.run(study, stored[study.name])
        except KeyboardInterrupt:
            print(f"zoo: the search stopped; continue it with {continue_with}", file=sys.stderr)
            raise SystemExit(130) from None
        except BaseException as stop:
            if not isinstance(stop, Exception):  # a signal stopped a trial: zoo.cli.train.main says how to go on
                stop.continue_with = continue_with
            raise
        finally:
            self.worker.leave()
        from zoo.report.runs import find_runs
        from zoo.search.report import format_search, search_families

        print("\n" + format_search(search_families(find_runs([sweep_dir]))))

    def compose(self, overrides: list[str]) -> DictConfig:
        return self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))

    def where(self, sweep_dir: Path) -> str:
        """The setting that names where the studies are stored, for the messages."""
        return f"hydra.sweeper.storage={self.storage_url}" if self.storage_url else f"hydra.sweep.dir={sweep_dir}"

    def open_studies(self, studies: list[Study], sweep_dir: Path) -> dict[str, Any]:
        """Every study of the search, by name: all made at once, each with its :meth:`definition`, when the storage
        holds no search (so a stopped search is known whole); else the ones it holds, once they are this search."""
        import optuna

        stored = stored_definitions(self.storage)
        self.refuse_another(stored, studies, self.where(sweep_dir))
        opened = {}
        for study in studies:
            opened[study.name] = optuna.create_study(
                storage=self.storage, study_name=study.name, direction=study.direction, load_if_exists=True
            )
            if not stored:
                opened[study.name].set_user_attr(DEFINITION, self.definition(study))
        return opened

    def definition(self, study: Study) -> dict[str, Any]:
        """What makes ``study`` the one it is, as its storage keeps it (JSON; the space in its canonical spelling)."""
        return {
            "family": study.name,
            "monitor": study.monitor,
            "direction": study.direction,
            "overrides": [o for o, key in zip(study.overrides, override_keys(study.overrides)) if defining(key)],
            "space": {key: range_text(study.space[key]) for key in sorted(study.space)},
            "budget": [name for name in BUDGETS if getattr(self, name) is not None],
            "sampler": self.sampler_name,
        }

    def refuse_another(self, stored: dict[str, dict | None], studies: list[Study], where: str) -> None:
        """Refuse to go on with a storage that holds another search (``stored``: its studies' definitions by name;
        none: a new search), in one line naming the first setting that differs and how to resume instead."""
        if not stored:
            return
        names = [study.name for study in studies]
        if set(stored) != set(names):
            raise SearchError(
                f"{where} holds a search of {families(sorted(stored))}; this command searches {families(names)}: "
                f"resume with the comma lists that made it, {NEW_DIR}"
            )
        for study in studies:
            subject = f"{where} holds a search" + (f" (study {study.name})" if len(studies) > 1 else "")
            if stored[study.name] is None:
                raise SearchError(
                    f"{subject} made before zoo recorded what defines one, so it cannot be resumed; {NEW_DIR}"
                )
            differs = difference(stored[study.name], self.definition(study))
            if differs:
                raise SearchError(f"{subject} {differs}, {NEW_DIR}")

    def run(self, study: Study, stored: Any) -> None:
        """Take trials and run them, ``n_jobs`` at a time, until the study's budget is spent and no trial is under
        way, then re-run its best trial with each seed. What to run is decided, and every result told, in the
        search's turn, so that workers sharing the storage share the budget (:mod:`zoo.search.workers`)."""
        while True:
            with turn(self.sweep_dir):
                trials = self.take_trials(study, stored)
                jobs = [
                    (f"trial/{number}", self.job(study, params, "trial", number, attempt=attempt))
                    for number, params, attempt in trials
                ]
                batch = self.prepare(stored, jobs)
            if not trials:
                if not self.under_way(stored):
                    break
                time.sleep(WAIT_S)  # another worker's trials run: one may need taking over, and the re-runs wait
                continue
            started = time.monotonic()
            values = self.launch(batch)
            seconds = time.monotonic() - started
            flops = sum(trial_flops(self.job_dirs.get(key)) for key in batch.keys)
            with turn(self.sweep_dir):
                self.tell(study, stored, [number for number, _, _ in trials], values, seconds, flops)
        self.reseed_best(study, stored)

    def take_trials(self, study: Study, stored: Any) -> list[tuple[int, dict, int]]:
        """Up to ``n_jobs`` trials for this worker (number, values, attempt), each recorded as its: first those left
        running by a worker that has gone (:meth:`free`; each such attempt counted, so the trial's record says it
        ran again), then new ones while the budget allows, counting every trial under way. In the search's turn."""
        from optuna.trial import TrialState

        running = stored.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
        attrs = stored.user_attrs
        taken = [
            (t.number, t.params, attrs.get(f"attempts/trial/{t.number}", 1) + 1)
            for t in running
            if self.free(study, stored, f"trial/{t.number}", t.params)
        ][: self.n_jobs]
        for number, _, attempt in taken:
            stored.set_user_attr(f"attempts/trial/{number}", attempt)
        done = len(stored.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.FAIL)))
        left = self.budget_left(done + len(running), attrs.get("seconds", 0.0), attrs.get("flops", 0.0))
        for _ in range(int(min(self.n_jobs - len(taken), left))):
            stored.sampler = self.make_sampler(len(stored.trials))  # trial n's values: the same whichever worker asks
            trial = stored.ask(study.space)
            taken.append((trial.number, trial.params, 1))
        for number, _, _ in taken:
            stored.set_user_attr(f"worker/trial/{number}", self.worker.name)
        return taken

    def free(self, study: Study, stored: Any, key: str, params: dict, seed: int | None = None) -> bool:
        """Whether the job ``key`` may be taken: no live worker has it, and no process runs it still (a SLURM job
        whose worker has gone runs on: its result is read back once it ends, when its run is skipped as finished)."""
        attrs = stored.user_attrs
        if self.worker.alive(attrs.get(f"worker/{key}")):
            return False
        number = attrs.get(f"job/{key}")
        if number is None:
            return True
        role, trial = key.split("/")[:2]
        try:
            cfg = self.compose(self.job(study, params, role, int(trial), seed))
        except Exception:  # values that do not compose: prepare says so, and the job fails
            return True
        return not lock_held(job_dir(cfg, number) / LOCK_FILE)

    def under_way(self, stored: Any) -> bool:
        """Whether any trial of the study is running (in another worker: this one's are told)."""
        from optuna.trial import TrialState

        return bool(stored.get_trials(deepcopy=False, states=(TrialState.RUNNING,)))

    def tell(
        self, study: Study, stored: Any, numbers: list[int], values: list[float | None], seconds: float, flops: float
    ) -> None:
        """Tell the trials' results and add what they spent to the study's (the budget's) account. In the turn."""
        from optuna.trial import TrialState

        attrs = stored.user_attrs
        stored.set_user_attr("seconds", round(float(attrs.get("seconds", 0.0)) + seconds, 1))
        stored.set_user_attr("flops", float(attrs.get("flops", 0.0)) + flops)
        for number, value in zip(numbers, values):
            state = TrialState.COMPLETE if value is not None else TrialState.FAIL
            stored.tell(number, value, state=state, skip_if_finished=True)
            best = stored.best_trial if value is not None else None
            log.info(
                "%s: trial %d %s",
                study.name,
                number,
                "failed; the search goes on"
                if best is None
                else f"val {study.monitor} {value:.2f} (best {best.value:.2f}, trial {best.number})",
            )

    def budget_left(self, done: int, seconds: float, flops: float = 0.0) -> float:
        """How many trials may still start: none once ``minutes`` have passed or ``flops`` are spent, else what
        ``trials`` leaves."""
        if self.minutes is not None and seconds >= 60 * self.minutes:
            return 0
        if self.flops is not None and flops >= self.flops:
            return 0
        return math.inf if self.trials is None else self.trials - done

    def reseed_best(self, study: Study, stored: Any) -> None:
        """The best trial on validation, run again once per seed with the test split; workers share the re-runs, each
        taken as trials are (:meth:`free`) and recorded as :data:`DONE` once it has run."""
        from optuna.trial import TrialState

        if not self.reseed:
            return
        if not stored.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
            log.warning("%s: no trial finished, so none is run again with other seeds", study.name)
            return
        best = stored.best_trial
        seeds = {f"reseed/{best.number}/{seed}": seed for seed in self.reseed}
        while True:
            with turn(self.sweep_dir):
                attrs = stored.user_attrs
                left = [key for key in seeds if attrs.get(f"worker/{key}") != DONE]
                mine = [key for key in left if self.free(study, stored, key, best.params, seeds[key])][: self.n_jobs]
                for key in mine:
                    stored.set_user_attr(f"worker/{key}", self.worker.name)
                batch = self.prepare(
                    stored, [(key, self.job(study, best.params, "reseed", best.number, seeds[key])) for key in mine]
                )
            if not left:
                return
            if not mine:
                time.sleep(WAIT_S)  # another worker runs them
                continue
            self.launch(batch)
            with turn(self.sweep_dir):
                for key in mine:
                    stored.set_user_attr(f"worker/{key}", DONE)

    def job(
        self, study: Study, params: dict, role: str, trial: int, seed: int | None = None, attempt: int = 1
    ) -> list[str]:
        """A job's overrides: the study's, the trial's values, the test switch, the seed and the search record (with
        the attempt, from the second: a trial run again after its worker stopped). Its directory is the search's to
        give (:meth:`job_number`), so the job resumes the run it finds there: one that a stopped search, a requeued
        job or a worker that has gone left."""
        replaced = {"test", "resume_mode"} | ({"seed"} if seed is not None else set())
        kept = [o for o, key in zip(study.overrides, override_keys(study.overrides)) if key not in replaced]
        record = [
            f"+search.study={quoted(study.name)}",
            f"+search.trial={trial}",
            f"+search.role={role}",
            f"+search.direction={study.direction}",
            *([f"+search.attempt={attempt}"] if attempt > 1 else []),
        ]
        return [
            *kept,
            *as_overrides(params),
            f"test={str(role != 'trial').lower()}",
            "resume_mode=auto",
            *([f"seed={seed}"] if seed is not None else []),
            *record,
        ]

    def prepare(self, stored: Any, jobs: list[tuple[str, list[str]]]) -> Batch:
        """Compose ``jobs`` (the study's key for each job, its overrides) and number them: a job keeps its number, so
        its directory, while that directory can be resumed. A job whose values do not compose fails here. In the
        turn: the numbers are the search's."""
        batch = Batch([key for key, _ in jobs], [], {})
        for key, overrides in jobs:
            try:
                cfg = self.compose(overrides)
            except Exception as error:  # a value the config refuses (its type): this trial fails, the search goes on
                print(
                    f"zoo: error: {key.replace('/', ' ')} of study {stored.study_name} does not compose "
                    f"({one_line_reason(error)}); it fails, the search goes on",
                    file=sys.stderr,
                )
                batch.results[key] = None
                continue
            number = self.job_number(stored, key, cfg)
            self.job_dirs[key] = job_dir(cfg, number)
            batch.numbered.append((number, key, overrides))
        return batch

    def launch(self, batch: Batch) -> list[float | None]:
        """Run the batch's jobs through Hydra's launcher; each one's objective (None: failed), in the batch's order."""
        numbered, results = sorted(batch.numbered), dict(batch.results)
        while numbered:  # the launcher numbers a batch's jobs from its first: one launch per run of numbers
            size = next((k for k in range(1, len(numbered)) if numbered[k][0] != numbered[0][0] + k), len(numbered))
            run, numbered = numbered[:size], numbered[size:]
            returns = self.launcher.launch([overrides for _, _, overrides in run], initial_job_idx=run[0][0])
            results.update((key, objective(ret)) for (_, key, _), ret in zip(run, returns))
        return [results[key] for key in batch.keys]

    def job_number(self, stored: Any, key: str, cfg: DictConfig) -> int:
        """The job number recorded for ``key`` when its directory can still be resumed, else the search's next."""
        from zoo.config.schema import ResumeMode
        from zoo.run.claim import RunDirRefused, check_run_dir

        attr = f"job/{key}"
        number = stored.user_attrs.get(attr)
        if number is not None:
            try:
                check_run_dir(job_dir(cfg, number), mode=ResumeMode.auto)
                return number
            except RunDirRefused:  # it stopped before its first checkpoint: a new directory
                pass
        number = 1 + max(used_jobs(self.storage), default=-1)
        stored.set_user_attr(attr, number)
        return number

    def make_sampler(self, offset: int) -> Any:
        import optuna

        seed = self.seed + offset
        if self.sampler_name == "random":
            return optuna.samplers.RandomSampler(seed=seed)
        return optuna.samplers.TPESampler(seed=seed)


def read_study(base: list[str], combination: list[str], compose: Callable[[list[str]], DictConfig]) -> Study:
    """Compose one combination and read its space and monitored metric (a :class:`SearchError` if it has none)."""
    from zoo.training.evaluation import MetricSuite

    name, overrides = study_name(combination), [*base, *combination]
    cfg = compose(overrides)
    metrics = MetricSuite(cfg)
    return Study(
        name,
        overrides,
        read_space(cfg, name, fixed_keys(overrides)),
        metrics.monitor,
        "maximize" if metrics.mode == "max" else "minimize",
    )


def check_search(arguments: list[str], compose: Callable[..., DictConfig]) -> None:
    """A search's command line checked before Hydra starts (so a refusal leaves nothing behind): the sweeper's
    settings, every study's space, the storage URL and, where the storage holds a search, that it is this one.

    ``compose(overrides, hydra=...)``: :func:`zoo.config.compose.compose_config`, with Hydra's own settings when
    ``hydra``.
    """
    overrides = [a for a in arguments if not a.startswith("-")]
    own = [o for o in overrides if o.lstrip("+~").startswith("hydra")]
    settings = compose(own, hydra=True).hydra
    search = Search(**{k: v for k, v in OmegaConf.to_container(settings.sweeper).items() if k != "_target_"})
    search.check()
    base, combinations = grid([o for o in overrides if o not in own])
    discover()  # a study's metrics come from the plugins (the command line's own folders are discovered already)
    studies = [read_study(base, combination, compose) for combination in combinations]
    sweep_dir = Path(str(settings.sweep.dir))
    storage = stored_search(search.storage_url, sweep_dir)
    if storage is not None:
        search.refuse_another(stored_definitions(storage), studies, search.where(sweep_dir))


def stored_definitions(storage: Any) -> dict[str, dict | None]:
    """Each study the storage holds, by name: its :data:`DEFINITION` (None: made before zoo stored one)."""
    import optuna

    return {
        summary.study_name: summary.user_attrs.get(DEFINITION)
        for summary in optuna.study.get_all_study_summaries(storage, include_best_trial=False)
    }


def defining(key: str) -> bool:
    """Whether a setting is part of a study's definition's overrides (not in :data:`NOT_DEFINING`)."""
    return not any(key == setting or key.startswith(setting + ".") for setting in NOT_DEFINING)


def families(names: list[str]) -> str:
    """A search's studies, for the messages."""
    return "one family (no comma list)" if names == [SINGLE_STUDY] else ", ".join(names)


def difference(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """How a stored study's definition (``old``) and this command's differ, first difference only, and how to
    resume instead; None: the same study."""
    if (old["monitor"], old["direction"]) != (new["monitor"], new["direction"]):
        return (
            f"of {old['monitor']} ({old['direction']}); this command searches {new['monitor']} ({new['direction']}): "
            f"resume with monitor={old['monitor']}"
        )
    was, now = by_key(old["overrides"]), by_key(new["overrides"])
    for key in [*was, *(key for key in now if key not in was)]:
        if key not in now:
            return f"made with {was[key][0]}; this command leaves it out: resume with {was[key][0]}"
        if key not in was:
            return f"made without {key}; this command has {now[key][0]}: resume without it"
        if was[key][1] != now[key][1]:
            return f"made with {was[key][0]}; this command has {now[key][0]}: resume with {was[key][0]}"
    for key in sorted(set(old["space"]) | set(new["space"])):
        tuned, tunes = old["space"].get(key), new["space"].get(key)
        if tuned == tunes:
            continue
        if tuned and tunes:
            return (
                f"tuning {key} over {tuned}; this command tunes it over {tunes}: "
                f"resume with 'search.space.{key}=\"{tuned}\"'"
            )
        return (
            f"tuning {key} over {tuned}; this command does not tune it"
            if tuned
            else f"not tuning {key}; this command tunes it over {tunes}"
        ) + ": resume with the search= preset and search.space that made it"
    if old["budget"] != new["budget"]:
        return (
            f"whose budget is in {' and '.join(old['budget'])}; this command's is in {' and '.join(new['budget'])}: "
            f"resume with a budget in {' and '.join(old['budget'])} only (hydra.sweeper.{', '.join(BUDGETS)})"
        )
    if old["sampler"] != new["sampler"]:
        return (
            f"drawn by the {old['sampler']} sampler; this command's is {new['sampler']}: "
            f"resume with hydra.sweeper.sampler={old['sampler']}"
        )
    return None


def by_key(overrides: list[str]) -> dict[str, tuple[str, str]]:
    """Overrides by config key: each as written and its value as JSON (``x=8`` and ``+x=8`` set the same)."""
    return {
        o.key_or_group: (o.input_line, json.dumps(o.value(), sort_keys=True, default=str))
        for o in parse_overrides(overrides)
    }


def job_dir(cfg: DictConfig, number: int) -> Path:
    """Where job ``number`` of this composition runs: the sweep directory and its subdirectory pattern."""
    with open_dict(cfg):
        cfg.hydra.job.num, cfg.hydra.job.id = number, str(number)
    return Path(str(cfg.hydra.sweep.dir)) / str(cfg.hydra.sweep.subdir)


def spendable(budget: float | None) -> bool:
    """A search's budget in minutes or FLOPs: none, or a positive finite amount (an infinite one never ends)."""
    return budget is None or (math.isfinite(budget) and budget > 0)


def trial_flops(folder: Path | None) -> float:
    """The training FLOPs a trial's run recorded (failed and stopped runs record what they spent; 0: none)."""
    import json

    from zoo.run.layout import SUMMARY_FILE

    try:
        summary = json.loads((folder / SUMMARY_FILE).read_text()) if folder else {}
    except (OSError, ValueError):
        return 0.0
    flops = summary.get("compute", {}).get("flops") if isinstance(summary, dict) else None
    return float(flops) if isinstance(flops, (int, float)) else 0.0


def objective(ret: Any) -> float | None:
    """A job's return value when it is a finite number (zoo's job returns None when it failed)."""
    try:
        value = ret.return_value  # re-raises an error the job did not catch itself
    except Exception:
        return None
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def used_jobs(storage: Any) -> list[int]:
    """Every job number the storage's studies hold: a resumed search numbers its new jobs after them."""
    import optuna

    return [
        number
        for name in optuna.get_all_study_names(storage)
        for key, number in optuna.load_study(study_name=name, storage=storage).user_attrs.items()
        if key.startswith("job/")
    ]
