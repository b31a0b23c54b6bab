"""``zoo train``'s job, in the order it runs: prepare, build, fit, test, record.

1. prepare: check the config (:func:`zoo.config.validate.validate`), then resolve what the job does with the run
   already in its claimed directory (:func:`zoo.run.resume.plan_resume`). Nothing is written yet.
2. build: read the data (bad data is refused here, the directory still untouched), lock the directory, start the
   record (``summary.json`` says ``running``: from here on the directory holds a run), write the run's files
   (:func:`zoo.run.provenance.write_run_files`), then the model (from ``init_from``'s weights where a run
   starts: :mod:`zoo.training.init_from`), callbacks, loggers and the Trainer.
3. fit: train, from ``last.ckpt`` when resuming; record what training measured.
4. test: with checkpoint averaging (``trainer.average_last``/``average_best``), average the kept snapshots and
   validate the average; score it, else the best checkpoint, on the test split (unless ``test=false``).
5. record: the final ``summary.json``, the test outputs, the trackers' results and the printed table.

From the start of the record on, a failure or a signal is recorded as such (:meth:`RunRecord.recording`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import lightning as L
import torch
from hydra.core.hydra_config import HydraConfig
from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint
from lightning.pytorch.utilities import rank_zero_only
from lightning.pytorch.utilities.exceptions import SIGTERMException
from omegaconf import DictConfig, OmegaConf

from zoo.config.schema import ResumeMode
from zoo.config.validate import validate
from zoo.data.datamodule import ZooDataModule
from zoo.run.claim import Claim, claim_run_dir
from zoo.run.identity import run_identity
from zoo.run.interruptions import Interruptions
from zoo.run.layout import AVERAGE_CHECKPOINT, BEST_CHECKPOINT_NAME, CHECKPOINTS_DIR, LAST_CHECKPOINT, SUMMARY_FILE
from zoo.run.provenance import write_run_files
from zoo.run.record import RunRecord, validation_scores
from zoo.run.resume import Resume, Verdict, plan_resume, resume_mode
from zoo.run.summary import print_result, test_summary, training_summary, write_outputs
from zoo.run.tracking import one_wandb_run_per_job, send_results, wandb_run_id
from zoo.training.averaging import average_checkpoints, validation_prefers_average, write_checkpoint
from zoo.training.callbacks import AtomicCheckpointIO, LastCheckpoint, Throughput, TrainingCurves
from zoo.training.compute import ComputeMeter, steps_for_budget
from zoo.training.evaluation import MetricSuite
from zoo.training.init_from import check_initial, read_initial, start_from
from zoo.training.loggers import keep_earlier_metrics, make_loggers, unlogged
from zoo.training.memory import memory_refusal
from zoo.training.module import ZooModule
from zoo.training.scst import step_section
from zoo.training.snapshots import WeightSnapshots, averaging

log = logging.getLogger(__name__)


def train(cfg: DictConfig) -> dict:
    """Run one training job in Hydra's output directory and return its summary.

    The directory is claimed first (:func:`zoo.run.claim.claim_run_dir`; the entry has claimed it already)
    and locked once the config and the data have passed their checks, so a refused start changes nothing in it.
    SIGINT and SIGTERM are answered in every stage (:mod:`zoo.run.interruptions`). A finished run under
    ``resume_mode=auto`` is skipped (its summary is returned).
    """
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    # Under DDP, ranks > 0 are relaunched into rank 0's run directory: only rank 0 (read from the
    # environment until the Trainer exists) checks, locks and writes files into it.
    writes = rank_zero_only.rank == 0
    interruptions = Interruptions()
    with claim_run_dir(run_dir, writes, resume_mode(cfg)) as claim, interruptions.guard():
        if claim.verdict is Verdict.finished:
            print(f"zoo: {run_dir} finished already; skipped (resume_mode=auto)", file=sys.stderr)
            return json.loads((run_dir / SUMMARY_FILE).read_text())
        resume, metrics = prepare(cfg, claim)
        data = read_data(cfg, claim, resume)
        record = start_record(cfg, claim, resume, metrics)
        with one_wandb_run_per_job(), record.recording():  # each job's W&B run ends with the job, in a sweep too
            if writes:
                write_run_files(run_dir, cfg, [*metrics.metrics, *metrics.unavailable])
                claim.open_log()
            if resume.resuming:
                only_test = ": training had ended, only the test runs" if resume.tests_only else ""
                log.info("resuming %s from %s (step %d)%s", run_dir, LAST_CHECKPOINT, resume.step, only_test)
            job = build(cfg, data, record, interruptions, resume)
            device = str(job.trainer.strategy.root_device.type)
            with memory_refusal("training", cfg.data.max_tokens, device):
                fit(job, resume)
            with memory_refusal("testing", cfg.data.max_tokens, device):
                test(job)
            return record_results(job)


# ---------------------------------------------------------------------------------------------- prepare


def prepare(cfg: DictConfig, claim: Claim) -> tuple[Resume, MetricSuite]:
    """Check the config and resolve the resume; only reads (a run stopped before its first checkpoint is emptied,
    under the lock, to start again). A job that may have resumed checks ``init_from`` once it knows it starts."""
    validate(cfg)
    metrics = MetricSuite(cfg)
    resume = plan_resume(cfg, claim)
    if cfg.init_from and not resume.resuming and resume_mode(cfg) is not ResumeMode.never:
        read_initial(cfg)
    return resume, metrics


# ------------------------------------------------------------------------------------------------ build


def read_data(cfg: DictConfig, claim: Claim, resume: Resume) -> ZooDataModule:
    """Read the splits and fit the codecs in memory, then lock the directory: data refused here (or weights to start
    from whose vocabulary is not the codecs'), like a config refused before, has changed nothing in it. Seeds and
    threads are set for the whole job."""
    data = ZooDataModule(cfg, claim.run_dir)
    data.read()
    if cfg.init_from and not resume.resuming and claim.writes:  # DDP ranks > 0 load rank 0's codecs at setup
        check_initial(cfg, data.task)
    claim.acquire()
    quiet_lightning()
    L.seed_everything(cfg.seed, workers=True, verbose=False)
    if cfg.trainer.cpu_threads > 0:
        torch.set_num_threads(cfg.trainer.cpu_threads)
    return data


def start_record(cfg: DictConfig, claim: Claim, resume: Resume, metrics: MetricSuite) -> RunRecord:
    """``summary.json`` first, ``running`` (a resumed run's record goes on): from here on the directory holds a run."""
    record = RunRecord(claim.run_dir, run_identity(cfg, metrics.monitor), claim.writes)
    if resume.resuming:
        record.resume_from(resume.previous, resume.step)
    record.start()
    return record


@dataclass
class Job:
    """What the stages after build share: the config, the data, the model and the Trainer with its callbacks."""

    cfg: DictConfig
    run_dir: Path
    data: ZooDataModule
    module: ZooModule
    trainer: L.Trainer
    best: ModelCheckpoint
    last: LastCheckpoint
    throughput: Throughput
    record: RunRecord
    interruptions: Interruptions
    snapshots: WeightSnapshots | None  # with checkpoint averaging


def build(cfg: DictConfig, data: ZooDataModule, record: RunRecord, interruptions: Interruptions, resume: Resume) -> Job:
    """The model, the checkpoints, the loggers and the Trainer. A run whose training had ended gets ``max_steps``
    at its last step, so fit only restores its state from ``last.ckpt`` (its loops, best checkpoint, throughput)."""
    run_dir = record.path.parent
    data.setup()
    container = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    module = ZooModule(container, dataclasses.asdict(data.task.source_description()), data.task.target_vocab_size)
    if cfg.init_from and not resume.resuming:
        start_from(module, container, data.task)
    elif cfg.scst.enabled and not resume.resuming:
        log.warning(
            "scst.enabled without init_from: self-critical training starts from random weights, whose "
            "samples earn almost no reward; pass init_from=RUN (a run trained with cross-entropy)"
        )

    monitor, mode = f"val/{module.metrics.monitor}", module.metrics.mode
    # best.ckpt by the monitored metric; last.ckpt, always the latest state, is LastCheckpoint's (listed after it:
    # Lightning runs checkpoint callbacks last, in this order, so last.ckpt records the newest best too).
    # Both decide at the end of each validation (not at the end of the training epoch): the state last.ckpt records
    # then is complete, and a run resumed at an epoch's end finds what they monitor.
    checkpoints = run_dir / CHECKPOINTS_DIR
    best = ModelCheckpoint(
        dirpath=str(checkpoints),
        filename=BEST_CHECKPOINT_NAME,
        monitor=monitor,
        mode=mode,
        save_on_train_epoch_end=False,
    )
    last = LastCheckpoint(run_dir / LAST_CHECKPOINT, cfg.trainer.checkpoint_every_minutes, interruptions)
    throughput = Throughput()
    keep, by = averaging(cfg.trainer)
    snapshots = WeightSnapshots(run_dir, keep, by, monitor, mode) if keep else None
    loggers = make_loggers(cfg, run_dir, wandb_run_id(cfg, record, resume.previous))
    if resume.resuming and rank_zero_only.rank == 0:
        keep_earlier_metrics(loggers, run_dir, None if resume.tests_only else resume.step)
    options = lightning_options(cfg.trainer)
    budgeted = cfg.trainer.budget_flops is not None or cfg.trainer.budget_minutes is not None
    if budgeted:
        options.update(budget_options(cfg.trainer, module, data, record))
    if resume.tests_only:
        options["max_steps"] = resume.step
    stopping = (
        []
        if budgeted  # a budget is spent whole: the schedule ends there
        else [EarlyStopping(monitor=monitor, mode=mode, patience=cfg.trainer.patience, check_on_train_epoch_end=False)]
    )
    record.compute = ComputeMeter()
    trainer = L.Trainer(
        **options,
        default_root_dir=str(run_dir),
        logger=loggers,
        callbacks=[
            best,
            last,
            *stopping,
            throughput,
            record.compute,
            TrainingCurves(cfg.trainer.log_every_n_steps),
            record,
            interruptions,
            *([snapshots] if snapshots else []),
        ],
        plugins=[AtomicCheckpointIO()],  # a cut-off write never replaces a good checkpoint
        enable_model_summary=False,
        use_distributed_sampler=False,  # zoo's token-budget batch sampler shards batches across processes itself
        reload_dataloaders_every_n_epochs=1,  # each epoch has its own number of token-budget batches
    )
    return Job(cfg, run_dir, data, module, trainer, best, last, throughput, record, interruptions, snapshots)


def budget_options(trainer_cfg: DictConfig, module: ZooModule, data: ZooDataModule, record: RunRecord) -> dict:
    """The ``trainer`` section's budget (``budget_flops`` or ``budget_minutes``) as Lightning's limits: the optimiser
    steps that spend it (:mod:`zoo.training.compute`), validated at ``budget_validations`` equal fractions of it.
    The warmup is at most a tenth of those steps, so a small budget is not spent warming up; the record says what
    was laid out."""
    steps = steps_for_budget(trainer_cfg, module, data.train_dataloader())
    step = module.cfg[step_section(module.cfg)]
    step["warmup_steps"] = min(step["warmup_steps"], steps // 10)
    kind = "flops" if trainer_cfg.budget_flops is not None else "minutes"
    amount = trainer_cfg[f"budget_{kind}"]
    record.identity["budget"] = {kind: amount, "steps": steps, "warmup_steps": step["warmup_steps"]}
    log.info("budget %.3g %s: %d optimiser steps, warmup %d", amount, kind, steps, step["warmup_steps"])
    return {
        "max_steps": steps,
        "max_epochs": -1,
        "val_check_interval": steps // trainer_cfg.budget_validations,
        "check_val_every_n_epoch": None,
    }


# -------------------------------------------------------------------------------------------- fit, test


def fit(job: Job, resume: Resume) -> None:
    """Train (on from ``last.ckpt`` when resuming) and record what training measured. A signal stops training once
    ``last.ckpt`` is written; one that came as training ended leaves only the test to do."""
    ckpt_path = str(job.run_dir / LAST_CHECKPOINT) if resume.resuming else None
    if job.cfg.init_from and not resume.resuming:
        validate_start(job)
    try:
        # weights_only=False: the run's own checkpoints, which hold its config and random states as well
        job.trainer.fit(job.module, datamodule=job.data, ckpt_path=ckpt_path, weights_only=False)
    except SIGTERMException:  # the stop LastCheckpoint asked for, once last.ckpt was written
        raise job.interruptions.stopped(saved=job.last.saved_on_signal) from None
    job.record.training_ended(training_summary(job.module, job.trainer, job.best, job.throughput))
    if job.interruptions.signal is not None:
        raise job.interruptions.stopped(saved=True, trained=True)


def validate_start(job: Job) -> None:
    """Validate the weights ``init_from`` gave before the first step: recorded as the run's first validation (step 0)
    and written as ``best.ckpt`` with its score, so the best checkpoint is replaced only by better weights and early
    stopping counts from the start (an SCST stage at too large a step leaves its start as the best, and tested)."""
    job.interruptions.enter("start validation")  # a signal stops it at once: nothing is written before it ends
    (scores,) = job.trainer.validate(job.module, datamodule=job.data, verbose=False)
    if job.best.monitor not in scores:  # no validation batches (trainer.limit_val_batches=0)
        return
    job.record.validated(job.trainer, scores)
    score = torch.tensor(float(scores[job.best.monitor]))
    path = job.best.format_checkpoint_name({})  # the name ModelCheckpoint gives best.ckpt, which it then replaces
    job.trainer.save_checkpoint(path)
    job.best.best_k_models = {path: score}
    job.best.best_model_path = job.best.kth_best_model_path = path
    job.best.best_model_score = job.best.kth_value = score
    for stopping in job.trainer.early_stopping_callbacks:
        stopping.best_score = score


def test(job: Job) -> None:
    """Score the best checkpoint, or the average of the kept snapshots where validation prefers it, on the test
    split; ``test=false`` (a search's trial) leaves the split unseen."""
    weights = (average(job) if job.snapshots else None) or job.best.best_model_path or None
    job.interruptions.enter("test")
    if job.cfg.test:
        job.trainer.test(job.module, datamodule=job.data, ckpt_path=weights, verbose=False, weights_only=False)
    job.interruptions.enter("outputs")


def average(job: Job) -> str | None:
    """Write the mean of the kept snapshots as ``average.ckpt`` and validate it (recorded beside ``best_val``, off
    the validation curve); its path when its validation score is at least the best checkpoint's, so the test scores
    the weights validation chose (an average over weights still changing fast can be far worse), else None."""
    job.interruptions.enter("averaging")
    snapshots = job.snapshots.kept
    if not snapshots:
        log.warning("no snapshot to average (no validation ran): the test scores best.ckpt")
        return None
    path = job.run_dir / AVERAGE_CHECKPOINT
    if job.trainer.is_global_zero:
        write_checkpoint(average_checkpoints(job.snapshots.paths()), path)
    job.trainer.strategy.barrier("average")  # every process reads it
    with unlogged(job.trainer):
        (scores,) = job.trainer.validate(
            job.module, datamodule=job.data, ckpt_path=str(path), verbose=False, weights_only=True
        )
    val = validation_scores(scores)
    metrics, best = job.module.metrics, job.best.best_model_score
    chosen = validation_prefers_average(
        float(scores[f"val/{metrics.monitor}"]), None if best is None else float(best), metrics.mode
    )
    job.record.averaged(
        {
            "of": job.snapshots.by,
            "snapshots": [{"step": s["step"], "epoch": s["epoch"], "score": s["score"]} for s in snapshots],
            "val": val,
            "checkpoint": str(path),
            "tested": chosen,
        }
    )
    if job.trainer.is_global_zero:
        tested = (
            "the test scores it" if chosen else f"best.ckpt validates better ({float(best):.4f}): the test scores it"
        )
        log.info("average of the %s %d snapshots: validation %s; %s", job.snapshots.by, len(snapshots), val, tested)
    return str(path) if chosen else None


# ----------------------------------------------------------------------------------------------- record


def record_results(job: Job) -> dict:
    """The final ``summary.json``; from the process that writes the run, the test outputs with per-item scores,
    the trackers' samples and final metrics, and the printed result."""
    cfg, module, task, trainer = job.cfg, job.module, job.data.task, job.trainer
    test = module.results.get("test")
    summary = job.record.finish(test_summary(cfg, module, task, trainer))
    if trainer.is_global_zero:
        references = [item.references for item in test["items"]] if test else []
        item_scores = module.metrics.item_scores(test["hypotheses"], references) if test else {}
        write_outputs(job.run_dir, test, item_scores, task, cfg.samples)
        send_results(trainer, summary, test, task, cfg.samples)
        print_result(summary, job.run_dir)
    return summary


# --------------------------------------------------------------------------------------------- Lightning


def quiet_lightning() -> None:
    """Hide Lightning's advertising and notices that do not apply to a zoo run."""
    warnings.filterwarnings("ignore", message=".*exists and is not empty.*")
    warnings.filterwarnings("ignore", message=".*is smaller than the logging interval.*")
    warnings.filterwarnings("ignore", message=".*does not have many workers.*")
    warnings.filterwarnings("ignore", message=".*LeafSpec.*")
    # Every DDP rank scores the whole validation and test set from the results gathered from all ranks
    # (ZooModule._evaluate_epoch), so they log the same metrics: nothing to sync.
    warnings.filterwarnings("ignore", message=".*when logging on epoch level in distributed setting.*")
    for name in (
        "lightning.pytorch.utilities.rank_zero",
        "lightning.pytorch.accelerators.cuda",
        "lightning.pytorch.trainer.connectors.signal_connector",
    ):  # zoo says what a signal did
        logging.getLogger(name).setLevel(logging.WARNING)


# TrainerConfig fields that are zoo's own; every other field is passed to lightning.Trainer as it is.
ZOO_TRAINER_FIELDS = (
    "patience",
    "cpu_threads",
    "checkpoint_every_minutes",
    "average_last",
    "average_best",
    "budget_flops",
    "budget_minutes",
    "budget_validations",
)


def lightning_options(trainer_cfg: DictConfig) -> dict:
    """Keyword arguments for ``lightning.Trainer`` from the ``trainer`` section.

    Batch limits left at 1.0 ("all") are not passed: passing them makes Lightning print a notice.
    """
    options = OmegaConf.to_container(trainer_cfg, resolve=True)
    return {
        k: v for k, v in options.items() if k not in ZOO_TRAINER_FIELDS and not (k.startswith("limit_") and v == 1.0)
    }
