"""Lightning's Trainer for a zoo job: its callbacks, loggers, limits and options, built from the config.

The callbacks, in the order Lightning calls them: ``best.ckpt`` by the monitored metric and ``last.ckpt`` (Lightning
runs checkpoint callbacks last, in this order, so ``last.ckpt`` records the newest best too), early stopping (none
under a budget, which is spent whole), throughput, compute, the training curves, the run record, the signals' handler
and, with checkpoint averaging, the weight snapshots. Both checkpoints decide at the end of each validation (not at
the end of the training epoch): the state ``last.ckpt`` records then is complete, and a run resumed at an epoch's end
finds what they monitor.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from pathlib import Path

import lightning as L
from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint
from lightning.pytorch.utilities import rank_zero_only
from omegaconf import DictConfig, OmegaConf

from zoo.data.datamodule import ZooDataModule
from zoo.run.job import RunFolder
from zoo.run.layout import BEST_CHECKPOINT_NAME, CHECKPOINTS_DIR, LAST_CHECKPOINT
from zoo.run.record import RunRecord
from zoo.run.resume import Resume
from zoo.run.tracking import wandb_run_id
from zoo.training.budget import (
    BudgetSteps,
    Layout,
    budget_layout,
    fit_run_cost,
    minutes_layout,
    read_layout,
)
from zoo.training.callbacks import AtomicCheckpointIO, LastCheckpoint, Throughput, TrainingCurves
from zoo.training.compute import ComputeMeter, CostModel
from zoo.training.loggers import keep_earlier_metrics, make_loggers
from zoo.training.module import ZooModule
from zoo.training.scst import step_section
from zoo.training.snapshots import WeightSnapshots, averaging

log = logging.getLogger(__name__)

#: TrainerConfig fields that are zoo's own; every other field is passed to lightning.Trainer as it is.
ZOO_TRAINER_FIELDS = (
    "patience",
    "cpu_threads",
    "checkpoint_every_minutes",
    "average_last",
    "average_best",
    "budget_flops",
    "budget_minutes",
    "budget_validations",
    "counted_batches",
)


@dataclass
class Built:
    """A job as build made it, what the stages after it share: the config, the run folder, the data, the model, the
    Trainer and the callbacks those stages read."""

    cfg: DictConfig
    run: RunFolder
    data: ZooDataModule
    module: ZooModule
    trainer: L.Trainer
    best: ModelCheckpoint
    last: LastCheckpoint
    throughput: Throughput
    snapshots: WeightSnapshots | None  # with checkpoint averaging

    @property
    def run_dir(self) -> Path:
        return self.run.path

    @property
    def record(self) -> RunRecord:
        return self.run.record


def build_trainer(
    cfg: DictConfig,
    data: ZooDataModule,
    module: ZooModule,
    run: RunFolder,
    resume: Resume,
    cost: CostModel,
    layout: Layout | None,
) -> Built:
    """The checkpoints, the loggers and the Trainer for ``module``, charged by ``cost`` and, under a budget, limited
    by its ``layout`` (:func:`compute_layout`). A run whose training had ended gets ``max_steps`` at its last step,
    so fit only restores its state from ``last.ckpt`` (its loops, best checkpoint, throughput)."""
    monitor, mode = f"val/{module.metrics.monitor}", module.metrics.mode
    best = ModelCheckpoint(
        dirpath=str(run.path / CHECKPOINTS_DIR),
        filename=BEST_CHECKPOINT_NAME,
        monitor=monitor,
        mode=mode,
        save_on_train_epoch_end=False,
    )
    last = LastCheckpoint(run.path / LAST_CHECKPOINT, cfg.trainer.checkpoint_every_minutes, run.interruptions)
    throughput = Throughput()
    keep, by = averaging(cfg.trainer)
    snapshots = WeightSnapshots(run.path, keep, by, monitor, mode) if keep else None
    loggers = make_loggers(cfg, run.path, wandb_run_id(cfg, run.record, resume.previous))
    if resume.resuming and rank_zero_only.rank == 0:
        keep_earlier_metrics(loggers, run.path, None if resume.tests_only else resume.step)
    options = lightning_options(cfg.trainer)
    if layout is not None:
        options.update(budget_options(module, run.record, layout))
    if resume.tests_only:
        options["max_steps"] = resume.step
    stopping = (
        [BudgetSteps(options["max_steps"], layout.last_rows)]
        if layout is not None  # a budget is spent whole: the schedule ends there, and the last step validates
        else [EarlyStopping(monitor=monitor, mode=mode, patience=cfg.trainer.patience, check_on_train_epoch_end=False)]
    )
    run.record.compute = ComputeMeter(cost)
    trainer = L.Trainer(
        **options,
        default_root_dir=str(run.path),
        logger=loggers,
        callbacks=[
            best,
            last,
            *stopping,
            throughput,
            run.record.compute,
            TrainingCurves(cfg.trainer.log_every_n_steps),
            run.record,
            run.interruptions,
            *([snapshots] if snapshots else []),
        ],
        plugins=[AtomicCheckpointIO()],  # a cut-off write never replaces a good checkpoint
        enable_model_summary=False,
        use_distributed_sampler=False,  # zoo's token-budget batch sampler shards batches across processes itself
        reload_dataloaders_every_n_epochs=1,  # each epoch has its own number of token-budget batches
    )
    return Built(cfg, run, data, module, trainer, best, last, throughput, snapshots)


def compute_layout(
    trainer_cfg: DictConfig, module: ZooModule, data: ZooDataModule, saved: dict | None
) -> tuple[CostModel, Layout | None]:
    """The run's cost model and, under a budget, its layout (:mod:`zoo.training.budget`): measured when the run
    starts (before its record, so a budget refused leaves nothing), or read from what a resumed run wrote then
    (``saved``; a run made before budgets in minutes were kept has its minutes timed again)."""
    if saved is not None:
        cost, layout = read_layout(saved)
    else:
        cost = fit_run_cost(module, data, trainer_cfg.counted_batches)
        layout = budget_layout(trainer_cfg, cost, data) if trainer_cfg.budget_flops is not None else None
    if layout is None and trainer_cfg.budget_minutes is not None:
        layout = minutes_layout(trainer_cfg, module, data.train_dataloader())
    return cost, layout


def budget_options(module: ZooModule, record: RunRecord, layout: Layout) -> dict:
    """A budget's ``layout`` as Lightning's limits, validated at ``budget_validations`` equal fractions of it. The
    warmup is at most a tenth of its steps, so a small budget is not spent warming up; the record says what was laid
    out."""
    steps = layout.steps
    step = module.cfg[step_section(module.cfg)]
    step["warmup_steps"] = min(step["warmup_steps"], steps // 10)
    laid_out = {"laid_out_flops": layout.flops} if layout.flops is not None else {}
    budget = {layout.unit: layout.budget, "steps": steps, "warmup_steps": step["warmup_steps"], **laid_out}
    record.identity["budget"] = budget
    log.info("budget %.3g %s: %d optimiser steps, warmup %d", layout.budget, layout.unit, steps, step["warmup_steps"])
    return {
        "max_steps": steps,
        "max_epochs": -1,
        "val_check_interval": layout.validate_every,
        "check_val_every_n_epoch": None,
    }


def lightning_options(trainer_cfg: DictConfig) -> dict:
    """Keyword arguments for ``lightning.Trainer`` from the ``trainer`` section.

    Batch limits left at 1.0 ("all") are not passed: passing them makes Lightning print a notice.
    """
    options = OmegaConf.to_container(trainer_cfg, resolve=True)
    return {
        k: v for k, v in options.items() if k not in ZOO_TRAINER_FIELDS and not (k.startswith("limit_") and v == 1.0)
    }


def quiet_lightning() -> None:
    """Hide Lightning's advertising and notices that do not apply to a zoo run."""
    warnings.filterwarnings("ignore", message=".*exists and is not empty.*")
    warnings.filterwarnings("ignore", message=".*is smaller than the logging interval.*")
    warnings.filterwarnings("ignore", message=".*does not have many workers.*")
    warnings.filterwarnings("ignore", message=".*LeafSpec.*")
    # zoo's data module resumes mid-epoch exactly (it saves the batches done; tests/e2e/test_resume.py), which
    # Lightning, looking at the DataLoader alone, cannot see.
    warnings.filterwarnings("ignore", message=".*your dataloader is not resumable.*")
    # Every DDP rank scores the whole validation and test set from the results gathered from all ranks
    # (ZooModule._evaluate_epoch), so they log the same metrics: nothing to sync.
    warnings.filterwarnings("ignore", message=".*when logging on epoch level in distributed setting.*")
    for name in (
        "lightning.pytorch.utilities.rank_zero",
        "lightning.pytorch.accelerators.cuda",
        "lightning.pytorch.trainer.connectors.signal_connector",
    ):  # zoo says what a signal did
        logging.getLogger(name).setLevel(logging.WARNING)
