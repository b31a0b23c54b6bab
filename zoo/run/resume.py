"""Resuming: what a job does with the run already in its directory, resolved before anything is written.

``resume_mode`` (:class:`~zoo.config.schema.ResumeMode`) says whether a job may continue a run; the run's
``summary.json`` and ``last.ckpt`` say what is left to do (:class:`Verdict`, :class:`Resume`). A resumed run
must compute what it did: its config may differ from the saved one only in :data:`RESUME_MAY_CHANGE`.
``resume=RUN_DIR`` on the command line composes the run's own overrides with the new ones
(:func:`resume_overrides`), checked before Hydra creates any folder.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from hydra.utils import to_absolute_path
from omegaconf import DictConfig, ListConfig, OmegaConf

from zoo.config.files import RESTORE, load_yaml
from zoo.config.overrides import override_key
from zoo.config.schema import ResumeMode
from zoo.config.sections import BUDGETS, STEP_SETTINGS, ScstConfig
from zoo.errors import ZooError
from zoo.run.identity import RECORDING_SETTINGS, flat
from zoo.run.layout import CONFIG_FILE, LAST_CHECKPOINT, LOCK_FILE, OVERRIDES_FILE, SUMMARY_FILE

#: The modes under which a job may continue the run it finds in its directory.
CONTINUING = (ResumeMode.auto, ResumeMode.must)
#: The settings that say how long a run trains: a finished run resumed with one of them changed trains further.
TRAINING_LIMITS = ("trainer.max_epochs", "trainer.max_steps", "trainer.max_time", "trainer.patience")
#: Settings a resumed run may change (a key or a whole section): those that do not change what it computes, how
#: long it trains, how it decodes, and how much of validation and test it runs. Any other difference is refused.
RESUME_MAY_CHANGE = (
    *RECORDING_SETTINGS,
    "decode",
    *TRAINING_LIMITS,
    "trainer.limit_val_batches",
    "trainer.limit_test_batches",
)
#: Settings added after runs were first recorded, with the value every run made before them had: a run that
#: predates a setting resumes when the setting keeps that value.
ADDED_SETTINGS = {
    "trainer.num_nodes": 1,
    "trainer.average_last": 0,
    "trainer.average_best": 0,
    "trainer.counted_batches": 16,  # the number counted before it was a setting (a resumed run reads compute.json)
    "init_from": None,
    **{f"scst.{setting.name}": setting.default for setting in dataclasses.fields(ScstConfig)},
}


class ResumeRefused(ZooError):
    """The run cannot be continued as asked (its config would change what it computes, its record is damaged)."""


class Verdict(Enum):
    """What a job does in its directory (:func:`zoo.run.claim.check_run_dir`)."""

    start = "start"  # new or empty: a new run
    resume = "resume"  # a run with last.ckpt, under resume_mode auto or must: it continues
    restart = "restart"  # a run stopped before its first checkpoint: emptied, it starts again in place
    finished = "finished"  # a finished run under resume_mode=auto: the job is skipped


def resume_mode(cfg: Any) -> ResumeMode:
    """``resume_mode``, or its default: must with ``resume=RUN_DIR``; auto in a job submitit runs, never elsewhere.

    A submitit job (``hydra/launcher=slurm``, ``submitit_slurm``, ``submitit_local``) may run again: submitit requeues
    it after a pre-emption or time-out signal, SLURM after a pre-emption or a node failure. It runs again with the
    same arguments, into the same directory, which then holds its run: auto continues it from ``last.ckpt`` (and
    skips it if it finished). The first time the directory is new, so auto starts the run as never would.
    """
    mode = cfg.get("resume_mode")
    if mode:
        return ResumeMode(mode)
    if cfg.get("resume"):
        return ResumeMode.must
    return ResumeMode.auto if under_submitit() else ResumeMode.never


def under_submitit() -> bool:
    """Whether this process is a job submitit runs (it sets ``SUBMITIT_EXECUTOR``: slurm, local, ...)."""
    return bool(os.environ.get("SUBMITIT_EXECUTOR"))


# ------------------------------------------------------------------------------------- in the job


@dataclass(frozen=True)
class Resume:
    """What this job continues: the run's record before it (``previous``), the step ``last.ckpt`` holds, and whether
    training had ended (``tests_only``: fit only restores the state, then the test runs as it would have)."""

    verdict: Verdict
    previous: dict
    step: int = 0
    tests_only: bool = False

    @property
    def resuming(self) -> bool:
        return self.verdict is Verdict.resume


def plan_resume(cfg: DictConfig, claim: Any) -> Resume:
    """Resolve what the job does with its claimed directory, refusing a resume that would change the run before
    anything changes; a run stopped before its first checkpoint is emptied (under the lock) to start again."""
    run_dir = claim.run_dir
    if claim.verdict is Verdict.restart:  # before the data: it would read the stopped attempt's tokenizers
        claim.acquire()
        clear_stopped_run(run_dir)
    if claim.verdict is not Verdict.resume:
        return Resume(claim.verdict, {})
    previous = read_summary(run_dir)
    tests_only = False
    if claim.writes:
        check_resume_config(run_dir, cfg)
        tests_only = training_had_ended(run_dir, cfg, previous)
    return Resume(claim.verdict, previous, checkpoint_step(run_dir / LAST_CHECKPOINT), tests_only)


def read_summary(run_dir: Path) -> dict:
    """The run's ``summary.json`` (empty when it has none: a run killed before its first write)."""
    path = run_dir / SUMMARY_FILE
    try:
        return json.loads(path.read_text()) if path.is_file() else {}
    except ValueError:
        raise ResumeRefused(
            f"{path} is not valid JSON (damaged), so the run's record cannot be continued; "
            "start it again in a new hydra.run.dir"
        ) from None


def _saved_and_new(run_dir: Path, cfg: DictConfig) -> tuple[dict[str, Any], dict[str, Any]]:
    """The run's saved config and this job's, each as dotted keys."""
    saved = flat(OmegaConf.to_container(OmegaConf.load(run_dir / CONFIG_FILE), resolve=False))
    return saved, flat(OmegaConf.to_container(cfg, resolve=True, enum_to_str=True))


def check_resume_config(run_dir: Path, cfg: DictConfig) -> None:
    """Refuse a resume whose config differs from the run's saved ``config.yaml`` in a setting outside
    :data:`RESUME_MAY_CHANGE`, naming the first such key; only reads."""
    if not (run_dir / CONFIG_FILE).is_file():
        raise ResumeRefused(f"run {run_dir} has no {CONFIG_FILE} to resume with; it cannot be resumed")
    saved, new = _saved_and_new(run_dir, cfg)
    if saved.get("scst.enabled") and "scst.lr" not in saved:  # an SCST run made before scst.lr trained at optim's
        saved.update({f"scst.{key}": saved.get(f"optim.{key}") for key in STEP_SETTINGS})
    saved = {**ADDED_SETTINGS, **saved}
    may_change = [key for key in RESUME_MAY_CHANGE if key not in ("resume", "resume_mode")]
    # A component chosen anew first: its other fields then differ too, and would read as an edited config.yaml.
    for key in sorted(set(saved) | set(new), key=lambda k: (not k.endswith(".name"), k.split(".")[0], k)):
        if saved.get(key, "<unset>") == new.get(key, "<unset>"):
            continue
        if any(key == allowed or key.startswith(allowed + ".") for allowed in RESUME_MAY_CHANGE):
            continue
        if key not in saved:
            raise ResumeRefused(
                f"{run_dir / CONFIG_FILE} has no {key}: it was cut off or edited, or an older zoo wrote it; {RESTORE}"
            )
        if key in new and trained_with(run_dir).get(key, "<unset>") == new[key]:  # the file changed, not this job
            raise ResumeRefused(
                f"{run_dir / CONFIG_FILE} has {key}={saved[key]}, and the run trained with {new[key]} (its "
                f"last.ckpt): config.yaml was edited since; {RESTORE}"
            )
        raise ResumeRefused(
            f"cannot resume {run_dir} with {key}={new.get(key, '<unset>')}: "
            f"the run has {key}={saved.get(key, '<unset>')}; "
            f"a resumed run keeps what it computes (only {', '.join(may_change)} may change), "
            "so start a new run for this"
        )


def trained_with(run_dir: Path) -> dict[str, Any]:
    """The config the run trained with as its ``last.ckpt`` holds it, as dotted keys; empty without one that reads."""
    import torch

    path = run_dir / LAST_CHECKPOINT
    if not path.is_file():
        return {}
    try:
        return flat(torch.load(path, map_location="cpu", weights_only=False, mmap=True)["hyper_parameters"]["cfg"])
    except Exception:  # noqa: BLE001 - a last.ckpt that cannot be read is refused as such (checkpoint_step)
        return {}


def training_had_ended(run_dir: Path, cfg: DictConfig, previous: dict) -> bool:
    """Whether resuming only tests: the run's training had ended (stopped while testing, or finished untested and
    resumed with ``test=true``) and no training limit was raised.

    A finished, tested run resumed with the same training limits would only test again and overwrite its
    record (its time, memory and latency): refused, saying how to train it longer. A budget's run is refused
    whatever its limits: its steps were laid out when it started, so it would train none.
    """
    saved, new = _saved_and_new(run_dir, cfg)
    budget = next((f"trainer.{name}" for name in BUDGETS if cfg.trainer.get(name) is not None), None)
    if budget is None and any(saved.get(key) != new.get(key) for key in TRAINING_LIMITS):
        return False
    finished = previous.get("status") == "finished"
    if not (finished or previous.get("trained")):
        return False
    if finished and (previous.get("tested", True) or not cfg.test) and budget is not None:
        raise ResumeRefused(
            f"run {run_dir} spent its {budget}={float(new[budget]):g} already ({previous.get('steps', '?')} steps, "
            "laid out when it started); resuming it would only test it again and overwrite its record, whatever its "
            f"training limits: for a larger budget start a new run; its results: zoo compare {run_dir}"
        )
    if finished and (previous.get("tested", True) or not cfg.test):
        raise ResumeRefused(
            f"run {run_dir} finished already ({previous.get('steps', '?')} steps); resuming it would only test it "
            f"again and overwrite its record: to train it longer, raise trainer.max_epochs (now "
            f"{saved.get('trainer.max_epochs')}) or trainer.max_steps; its results: zoo compare {run_dir}"
        )
    return True


def checkpoint_step(path: Path) -> int:
    """The global step ``path`` (a run's ``last.ckpt``) was written at; one line when the file cannot be read."""
    import torch

    try:
        return int(torch.load(path, map_location="cpu", weights_only=False, mmap=True)["global_step"])
    except Exception as error:  # empty, cut off, or not a checkpoint: torch's messages say little about which
        size = path.stat().st_size
        raise ResumeRefused(
            f"{path} cannot be read ({size} bytes, {type(error).__name__}): it is empty, cut off or not a "
            "checkpoint, so the run cannot be resumed from it; start it again in a new hydra.run.dir "
            "(its best.ckpt, if any, still works with zoo translate --checkpoint best)"
        ) from None


def clear_stopped_run(run_dir: Path) -> None:
    """Empty a run directory whose run stopped before its first checkpoint (under its lock), so it starts again
    there as a new run would: what it had written (config, logs, tokenizers) was all made by that attempt."""
    for entry in run_dir.iterdir():
        if entry.name == LOCK_FILE:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


# ------------------------------------------------------------------------------ on the command line


def resume_overrides(overrides: list[str]) -> list[str]:
    """``resume=RUN_DIR``: the run's own overrides (``.hydra/overrides.yaml``), then these; the job runs in RUN_DIR.

    The run is composed again as it was made, with the new overrides on top; the job compares the result with the
    run's ``config.yaml`` (:func:`check_resume_config`) and refuses a change to what the run computes.
    """
    values = {override_key(o): o.split("=", 1)[1] for o in overrides if "=" in o}
    run = values.get("resume")
    sweep = any(o in ("-m", "--multirun") for o in overrides)
    if run in (None, "null"):
        check_runs_to_continue(values, sweep)
        return overrides
    names_a_mode = run in ResumeMode.__members__
    if names_a_mode and sweep:
        raise ZooError(
            f"resume= takes a run directory; to resume a sweep write resume_mode={run} (with its hydra.sweep.dir)"
        )
    if sweep:
        raise ZooError(
            "resume=RUN_DIR continues one run; to resume a sweep, repeat its command with "
            "hydra.sweep.dir=SWEEP_DIR resume_mode=auto"
        )
    run_dir = Path(to_absolute_path(run))
    if names_a_mode and not run_dir.exists():
        raise ZooError(f"resume= takes a run directory (there is no {run_dir}); for the mode, write resume_mode={run}")
    given_dir = values.get("hydra.run.dir")
    if given_dir is not None and Path(to_absolute_path(given_dir)) != run_dir:
        raise ZooError(f"resume={run} and hydra.run.dir={given_dir} name two directories; give resume alone")
    check_resumable(run, run_dir, values.get("resume_mode"))
    saved_file = run_dir / OVERRIDES_FILE
    saved = [str(o) for o in load_yaml(saved_file, ListConfig)] if saved_file.is_file() else []
    mine = set(values) | {"resume", "resume_mode", "hydra.run.dir"}
    kept = [o for o in saved if override_key(o) not in mine]
    return [*kept, *[o for o in overrides if override_key(o) != "hydra.run.dir"], f"hydra.run.dir={run_dir}"]


def check_runs_to_continue(values: dict[str, str], sweep: bool) -> None:
    """With ``resume_mode=auto`` or ``must``, a job may continue the run in its directory: the ``config.yaml``
    of each (``hydra.run.dir``, or the job folders of ``hydra.sweep.dir``) is read first, so a damaged one is
    one line naming it before any job starts."""
    if values.get("resume_mode") not in CONTINUING:
        return
    folder = values.get("hydra.sweep.dir" if sweep else "hydra.run.dir")
    if folder is None:
        return
    root = Path(to_absolute_path(folder))
    for saved in root.glob(f"*/{CONFIG_FILE}") if sweep else [root / CONFIG_FILE]:
        if saved.is_file():
            load_yaml(saved)


def check_resumable(run: str, run_dir: Path, mode: str | None) -> None:
    """Refuse ``resume=RUN`` where RUN is a file, or a folder that does not exist (unless the mode may start a
    run there), before Hydra creates any folder; and a run whose ``config.yaml`` is damaged, naming it."""
    if run_dir.exists() and not run_dir.is_dir():
        raise ZooError(
            f"resume={run}: {run_dir} is a file, not a run directory; give the folder that `zoo train` "
            "printed as the run directory"
        )
    if not run_dir.exists() and mode in (None, "null", ResumeMode.must):
        raise ZooError(
            f"resume={run}: there is no folder {run_dir}; give the folder that `zoo train` printed as the "
            "run directory, or add resume_mode=auto to start a run there"
        )
    if (run_dir / CONFIG_FILE).is_file():
        load_yaml(run_dir / CONFIG_FILE)
