"""``zoo train``: compose the config, train, test with the best checkpoint, record the run."""

from __future__ import annotations

import csv
import dataclasses
import json
import logging
import os
import secrets
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import lightning as L
import torch
from hydra.core.hydra_config import HydraConfig
from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.utilities import rank_zero_only
from lightning.pytorch.utilities.exceptions import SIGTERMException
from omegaconf import DictConfig, OmegaConf

from zoo.config.validate import validate
from zoo.data.datamodule import ZooDataModule
from zoo.training.callbacks import AtomicCheckpointIO, LastCheckpoint, Throughput
from zoo.training.evaluation import MetricSuite
from zoo.training.interruptions import Interruptions, RunInterrupted
from zoo.training.loggers import check_tracker_packages, make_loggers
from zoo.training.module import ZooModule
from zoo.training.record import SUMMARY_FILE, RunRecord, run_identity
from zoo.training.rundir import (
    LAST_CHECKPOINT,
    ResumeRefused,
    check_resume_config,
    checkpoint_step,
    claim_run_dir,
    clear_stopped_run,
    resume_mode,
    resume_plan,
    write_run_files,
)
from zoo.training.summary import print_result, test_summary, training_summary, write_outputs
from zoo.training.tracking import one_wandb_run_per_job, send_results

log = logging.getLogger(__name__)


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


def train(cfg: DictConfig) -> dict:
    """Run one training job in Hydra's output directory and return its summary.

    The directory is claimed first (:func:`zoo.training.rundir.claim_run_dir`: new or empty, or a run
    to resume; the entry has claimed it already) and locked once the config has passed its checks, so
    a refused start changes nothing in it. Once the run has started, ``summary.json`` records it as
    running, then finished, failed or interrupted (with the phase). SIGINT and SIGTERM are answered in
    every phase (:mod:`zoo.training.interruptions`).

    A resumed run (``resume``/``resume_mode``) continues from ``checkpoints/last.ckpt`` with the config
    checked against the run's own; one whose training had ended (stopped while testing, or a finished run
    that was never tested, resumed with ``test=true``) only tests; one stopped before its first checkpoint
    starts again in place. A finished run under ``resume_mode=auto`` is skipped (its summary is returned).
    """
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    # Under DDP, ranks > 0 are relaunched into rank 0's run directory: only rank 0 (read from the
    # environment until the Trainer exists) checks, locks and writes files into it.
    writes = rank_zero_only.rank == 0
    interruptions = Interruptions()
    with claim_run_dir(run_dir, writes, resume_mode(cfg)) as claim, interruptions.guard():
        if claim.verdict == "finished":
            summary = json.loads((run_dir / SUMMARY_FILE).read_text())
            print(f"zoo: {run_dir} finished already; skipped (resume_mode=auto)", file=sys.stderr)
            return summary
        resuming = claim.verdict == "resume"
        validate(cfg)
        previous = read_summary(run_dir) if resuming else {}
        tested_only = False
        if resuming and writes:
            check_resume_config(run_dir, cfg)  # before anything changes
            tested_only = resume_plan(run_dir, cfg, previous) == "test"
        step = checkpoint_step(run_dir / LAST_CHECKPOINT) if resuming else 0
        check_tracker_packages(cfg.logger)
        metrics = MetricSuite(cfg)
        if claim.verdict == "restart":  # before the data: it would read the stopped attempt's tokenizers
            claim.acquire()
            clear_stopped_run(run_dir)
        data = ZooDataModule(cfg, run_dir)
        data.read()  # missing or malformed data is refused here, before the run directory is written
        claim.acquire()  # the lock: a config or data refused above has changed nothing in the directory
        quiet_lightning()
        L.seed_everything(cfg.seed, workers=True, verbose=False)
        if cfg.trainer.cpu_threads > 0:
            torch.set_num_threads(cfg.trainer.cpu_threads)
        record = RunRecord(run_dir, run_identity(cfg, metrics.monitor), writes)
        if resuming:
            record.resume_from(previous, step)
        record.start()  # summary.json first: from here on the directory holds a run
        with one_wandb_run_per_job():  # in a sweep too: each job's W&B run ends with the job
            try:
                if writes:
                    write_run_files(claim, cfg, [*metrics.metrics, *metrics.unavailable])
                if resuming:
                    log.info(
                        "resuming %s from %s (step %d)%s",
                        run_dir,
                        LAST_CHECKPOINT,
                        step,
                        ": training had ended, only the test runs" if tested_only else "",
                    )
                with wandb_run_id(cfg, record, previous):
                    return _fit_and_test(
                        cfg,
                        data,
                        run_dir,
                        record,
                        interruptions,
                        run_dir / LAST_CHECKPOINT if resuming else None,
                        trained_steps=step if tested_only else None,
                    )
            except RunInterrupted as stop:
                record.interrupt(stop)
                raise
            except Exception as error:
                record.fail(error)
                raise


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


@contextmanager
def wandb_run_id(cfg: DictConfig, record: RunRecord, previous: dict) -> Iterator[None]:
    """With W&B on, the job's W&B run id is chosen here and kept in ``summary.json``, so a resumed run logs into
    the same W&B run (Lightning's WandbLogger resumes with ``resume="allow"``; wandb reads ``$WANDB_RUN_ID``)."""
    if not cfg.logger.wandb:
        yield
        return
    run_id = previous.get("wandb_run_id") or secrets.token_hex(4)
    record.identity["wandb_run_id"] = run_id
    before = os.environ.get("WANDB_RUN_ID")
    os.environ["WANDB_RUN_ID"] = run_id
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("WANDB_RUN_ID", None)
        else:
            os.environ["WANDB_RUN_ID"] = before


def keep_earlier_metrics(loggers: list, run_dir: Path, step: int | None) -> None:
    """A resumed run appends to its ``metrics.csv``: Lightning's CSV logger deletes the file it finds, so its
    rows up to the checkpoint's ``step`` (later ones are logged again) are written back first. ``step`` None:
    training had ended, every row but the test's is kept."""
    path = run_dir / "metrics.csv"
    if not path.is_file():
        return
    with open(path, newline="") as file:
        reader = csv.DictReader(file)
        header, rows = list(reader.fieldnames or []), [row for row in reader]
    if step is None:
        rows = [row for row in rows if not any(value for key, value in row.items() if key.startswith("test/"))]
    else:
        rows = [row for row in rows if not row.get("step") or int(float(row["step"])) < step]
    for logger in loggers:
        if isinstance(logger, CSVLogger):
            writer = logger.experiment  # made now: it deletes metrics.csv
            with open(path, "w", newline="") as file:
                out = csv.DictWriter(file, fieldnames=header)
                out.writeheader()
                out.writerows(rows)
            writer.metrics_keys = header


def _fit_and_test(
    cfg: DictConfig,
    data: ZooDataModule,
    run_dir: Path,
    record: RunRecord,
    interruptions: Interruptions,
    resume_from: Path | None = None,
    trained_steps: int | None = None,
) -> dict:
    """Fit (from ``resume_from`` when given), then test the best checkpoint and write the outputs.

    ``trained_steps``: training had ended at that step, so fit only restores the run's state from
    ``resume_from`` (its loops, best checkpoint, throughput) and the test runs as it would have.
    """
    data.setup()
    container = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    module = ZooModule(container, dataclasses.asdict(data.task.source_description()), data.task.target_vocab_size)

    monitor, mode = f"val/{module.metrics.monitor}", module.metrics.mode
    # best.ckpt by the monitored metric; last.ckpt, always the latest state, is LastCheckpoint's (listed after it:
    # Lightning runs checkpoint callbacks last, in this order, so last.ckpt records the newest best too).
    # Both decide at the end of each validation (not at the end of the training epoch): the state last.ckpt records
    # then is complete, and a run resumed at an epoch's end finds what they monitor.
    checkpoint = ModelCheckpoint(
        dirpath=str(run_dir / "checkpoints"), filename="best", monitor=monitor, mode=mode, save_on_train_epoch_end=False
    )
    last = LastCheckpoint(run_dir / "checkpoints", cfg.trainer.checkpoint_every_minutes, interruptions)
    throughput = Throughput()
    loggers = make_loggers(cfg, run_dir)
    if resume_from is not None and rank_zero_only.rank == 0:
        keep_earlier_metrics(loggers, run_dir, record.resumes[-1]["step"] if trained_steps is None else None)
    options = lightning_options(cfg.trainer)
    if trained_steps is not None:
        options["max_steps"] = trained_steps
    trainer = L.Trainer(
        **options,
        default_root_dir=str(run_dir),
        logger=loggers,
        callbacks=[
            checkpoint,
            last,
            EarlyStopping(monitor=monitor, mode=mode, patience=cfg.trainer.patience, check_on_train_epoch_end=False),
            throughput,
            record,
            interruptions,
        ],
        plugins=[AtomicCheckpointIO()],  # a cut-off write never replaces a good checkpoint
        enable_model_summary=False,
        use_distributed_sampler=False,  # zoo's token-budget batch sampler shards batches across processes itself
        reload_dataloaders_every_n_epochs=1,  # each epoch has its own number of token-budget batches
    )
    try:
        # weights_only=False: the run's own checkpoints, which hold its config and random states as well
        trainer.fit(
            module, datamodule=data, ckpt_path=str(resume_from) if resume_from is not None else None, weights_only=False
        )
    except SIGTERMException:  # the stop LastCheckpoint asked for, once last.ckpt was written
        raise interruptions.stopped(saved=last.saved_on_signal) from None
    record.training_ended(training_summary(module, trainer, checkpoint, throughput))
    if interruptions.signal is not None:  # it came as training ended: only the test is left to do
        raise interruptions.stopped(saved=True, trained=True)
    interruptions.enter("test")
    if cfg.test:  # test=false (a search's trial): the test split stays unseen, the summary says so
        trainer.test(
            module, datamodule=data, ckpt_path=checkpoint.best_model_path or None, verbose=False, weights_only=False
        )
    interruptions.enter("outputs")
    test = module.results.get("test")
    summary = record.finish(test_summary(cfg, module, data.task, trainer))
    if trainer.is_global_zero:
        item_scores = (
            module.metrics.item_scores(test["hypotheses"], [i.references for i in test["items"]]) if test else {}
        )
        write_outputs(run_dir, test, item_scores, data.task, cfg.samples)
        send_results(trainer, summary, test, data.task, cfg.samples)  # samples and final metrics to the trackers
        print_result(summary, run_dir)
    return summary


# TrainerConfig fields that are zoo's own; every other field is passed to lightning.Trainer as it is.
ZOO_TRAINER_FIELDS = ("patience", "cpu_threads", "checkpoint_every_minutes")


def lightning_options(trainer_cfg: DictConfig) -> dict:
    """Keyword arguments for ``lightning.Trainer`` from the ``trainer`` section.

    Batch limits left at 1.0 ("all") are not passed: passing them makes Lightning print a notice.
    """
    options = OmegaConf.to_container(trainer_cfg, resolve=True)
    return {
        k: v for k, v in options.items() if k not in ZOO_TRAINER_FIELDS and not (k.startswith("limit_") and v == 1.0)
    }
