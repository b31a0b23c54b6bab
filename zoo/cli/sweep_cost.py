"""What a sweep launches and what it costs, said before it starts: its number of runs and their training time here.

A preset that sweeps (``experiment=compare_families``: 15 recipes, 3 seeds each) holds a 2-core machine for hours,
which its command line does not show. The runs are counted as Hydra's basic sweeper makes them (the preset's
``hydra.sweeper.params``, the command line's settings over them, every combination), and their time is estimated
from this machine's own finished runs under the folders runs and sweeps go to: a run's configuration matched with
the last run here of the same recipe (the same config but for seed and length: epochs, steps, budget), whose
training seconds are scaled to the run's length (its epochs, or its FLOP budget against the FLOPs that run
counted). A recipe never run here is taken at the median of those that were, and said to be; without any, the
count is said alone. The time is training time (data, tokenizers and the test add a little to each run).

A sweep continued into its own folder (``resume_mode=auto``) skips the jobs that finished there: they are counted
apart, cost nothing, and their times estimate the rest (the cells of a map differ, so its own finished cells are
the only runs of its recipes).
"""

from __future__ import annotations

import functools
import json
import os
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from zoo.config.compose import compose_config
from zoo.config.overrides import key_and_value, parse_overrides
from zoo.errors import ZooError
from zoo.run.identity import config_key
from zoo.run.layout import CONFIG_FILE, SUMMARY_FILE

#: A sweep of more runs than this says what it costs before it launches.
A_FEW = 3
#: What sets how long a recipe trains: runs that differ only here are the same recipe, trained longer or shorter.
LENGTH = ("trainer.max_epochs", "trainer.max_steps", "trainer.budget_flops", "trainer.budget_minutes")


@dataclass(frozen=True)
class Trained:
    """What one finished run here took: its training seconds, and the length it trained for."""

    seconds: float
    epochs: int | None  # None: its length was a budget or a number of steps
    flops: float


@dataclass(frozen=True)
class Cost:
    """A sweep's runs and their estimated training time (None: no run here to estimate from)."""

    runs: int
    configurations: int
    seconds: float | None
    found: int  # configurations whose recipe this machine has run
    at_once: int  # runs the launcher trains at a time
    finished: int = 0  # jobs finished in the sweep's folder, which resume_mode=auto skips

    def says(self) -> str:
        """One line: the runs, the time one after another and at the launcher's pace, and what it is based on."""
        runs = f"{self.runs} runs of {self.configurations} configurations"
        if self.finished:
            runs += f", {self.finished} of them finished in its folder (resume_mode=auto skips them)"
        if self.seconds is None:
            return f"{runs}; no finished run on this machine to estimate their time from (./run train makes one)"
        pace = f", {duration(self.seconds / self.at_once)} {self.at_once} at a time" if self.at_once > 1 else ""
        guessed = self.configurations - self.found
        basis = "from this machine's last run of each recipe, scaled to these epochs" + (
            f"; {guessed} recipe(s) never run here taken at the median of the others" if guessed else ""
        )
        rest = f" for the other {self.runs - self.finished}" if self.finished else ""
        return f"{runs}: about {duration(self.seconds)} of training{rest} one after another{pace} ({basis})"


def duration(seconds: float) -> str:
    """``1 h 35 min``, ``12 min``, ``40 s``: as precise as an estimate is."""
    minutes = round(seconds / 60)
    if minutes >= 60:
        return f"{minutes // 60} h {minutes % 60} min"
    return f"{minutes} min" if minutes else f"{round(seconds)} s"


def sweep_jobs(overrides: list[str], hydra_cfg: Any) -> list[list[str]]:
    """Each job's overrides as Hydra's basic sweeper makes them: the preset's ``hydra.sweeper.params``, then the
    command line's settings (a key given there replaces the preset's), every combination."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    params = OmegaConf.select(hydra_cfg, "hydra.sweeper.params", default=None) or {}
    settings = [f"{key}={value}" for key, value in params.items()] + [o for o in overrides if not o.startswith("-")]
    return BasicSweeper.split_arguments(parse_overrides(settings), None)[0]


def sweep_cost(overrides: list[str]) -> Cost:
    """The runs ``zoo train -m OVERRIDES`` launches and their training time estimated from this machine's runs."""
    firsts = [
        f"{o.get_key_element()}={next(iter(o.sweep_string_iterator()))}" if o.is_sweep_override() else o.input_line
        for o in parse_overrides([o for o in overrides if not o.startswith("-")])
    ]
    hydra_cfg = compose_config(firsts, hydra=True)  # the sweeper's and launcher's settings, the run folders
    jobs = sweep_jobs(overrides, hydra_cfg)
    configurations = {without(job, ("seed",)) for job in jobs}
    own = continued_folder(hydra_cfg)
    trained = last_runs(run_folders() + ([own] if own else []))
    times = {configuration: estimate(configuration, trained) for configuration in configurations} if trained else {}
    times = {configuration: seconds for configuration, seconds in times.items() if seconds is not None}
    done = finished_jobs(own, len(jobs)) if own else set()
    total = None
    if times:
        guess = statistics.median(times.values())
        total = sum(times.get(without(job, ("seed",)), guess) for number, job in enumerate(jobs) if number not in done)
    return Cost(len(jobs), len(configurations), total, len(times), at_once(hydra_cfg), len(done))


#: The job's folder in its sweep's (``hydra.sweep.subdir``) as zoo's config sets it: the job's number.
JOB_SUBDIR = "${hydra.job.num}"


def continued_folder(hydra_cfg: Any) -> Path | None:
    """The sweep's own folder when the sweep continues into it (``resume_mode`` auto or must) and it exists, with
    its jobs in folders named by their numbers."""
    from zoo.run.resume import CONTINUING, resume_mode

    if resume_mode(hydra_cfg) not in CONTINUING or hydra_cfg.hydra.sweep._get_node("subdir")._value() != JOB_SUBDIR:
        return None
    folder = OmegaConf.select(hydra_cfg, "hydra.sweep.dir", default=None)
    return Path(str(folder)) if folder is not None and Path(str(folder)).is_dir() else None


def finished_jobs(folder: Path, jobs: int) -> set[int]:
    """The job numbers whose run in ``folder`` finished, as the job's claim reads it to skip the job (a job's folder
    is its number: ``hydra.sweep.subdir``)."""
    from zoo.run.claim import run_status

    return {number for number in range(jobs) if run_status(folder / str(number)) == "finished"}


def without(job: list[str] | tuple[str, ...], keys: tuple[str, ...]) -> tuple[str, ...]:
    """A job's overrides less those setting ``keys``."""
    return tuple(o for o in job if key_and_value(o)[0] not in keys)


def estimate(configuration: tuple[str, ...], trained: dict[str, Trained]) -> float | None:
    """The training seconds of a configuration from the last run here of its recipe, scaled to its length; None
    without such a run, or one of another kind of length."""
    key, composed = recipe(without(configuration, LENGTH))
    given = {o.get_key_element(): o.value() for o in parse_overrides(list(configuration))}
    length = {setting: given.get(setting, value) for setting, value in composed.items()}
    past = trained.get(key)
    if past is None:
        return None
    if length["trainer.budget_flops"]:
        return past.seconds * length["trainer.budget_flops"] / past.flops if past.flops else None
    if past.epochs and by_epochs(length):
        return past.seconds * length["trainer.max_epochs"] / past.epochs
    return None


def length_of(cfg: Any) -> dict[str, Any]:
    """The settings of ``cfg`` that say how long it trains (:data:`LENGTH`)."""
    return {key: OmegaConf.select(cfg, key, default=None) for key in LENGTH}


def by_epochs(length: dict[str, Any]) -> bool:
    """Whether a run trains for its epochs: no budget and no step limit (``max_steps`` -1 or null: none)."""
    budget = length["trainer.budget_flops"] or length["trainer.budget_minutes"]
    return not budget and (length["trainer.max_steps"] or -1) < 0


@functools.cache
def recipe(settings: tuple[str, ...]) -> tuple[str, dict[str, Any]]:
    """The recipe's key of the config ``settings`` compose to (the config less seed and length) and its length
    settings; composed once for all the variants that differ only in their seeds and lengths."""
    cfg = compose_config(list(settings))
    return config_key(cfg, leaving_out=LENGTH), length_of(cfg)


#: Where Hydra puts runs and sweeps by default (``outputs/<date>/<time>``, ``multirun/<date>/<time>``): the folders
#: searched for this machine's last runs. A folder given as ``hydra.run.dir`` or ``hydra.sweep.dir`` is not: its
#: parents can be anything (a home directory), and walking them is no estimate's business.
RUN_FOLDERS = ("outputs", "multirun")


def run_folders() -> list[Path]:
    """The folders zoo's runs and sweeps go to by default, in the current directory."""
    return [Path(folder) for folder in RUN_FOLDERS]


def last_runs(folders: list[Path]) -> dict[str, Trained]:
    """The last finished run of each recipe under ``folders``, by the recipe's key (the config less seed and
    length); a folder that cannot be read is passed over."""
    from zoo.config.files import load_yaml

    summaries = [file for folder in folders if folder.is_dir() for file in folder.rglob(SUMMARY_FILE)]
    found: dict[str, Trained] = {}
    for file in sorted(summaries, key=lambda file: file.stat().st_mtime):
        try:
            summary = json.loads(file.read_text())
            if not isinstance(summary, dict) or summary.get("status") != "finished" or not summary.get("train_seconds"):
                continue
            config = load_yaml(file.parent / CONFIG_FILE)
            epochs = config.trainer.max_epochs if by_epochs(length_of(config)) else None
            flops = summary.get("compute", {}).get("flops", 0)
            found[config_key(config, leaving_out=LENGTH)] = Trained(summary["train_seconds"], epochs, flops)
        except (OSError, ValueError, KeyError, ZooError, OmegaConfBaseException):  # damaged, or another zoo's
            continue
    return found


def at_once(hydra_cfg: Any) -> int:
    """How many jobs the sweep's launcher runs at a time: joblib's ``n_jobs`` (-1: one per core), else one."""
    n_jobs = OmegaConf.select(hydra_cfg, "hydra.launcher.n_jobs", default=None)
    if n_jobs is None:
        return 1
    return (os.cpu_count() or 1) if n_jobs == -1 else max(1, int(n_jobs))
