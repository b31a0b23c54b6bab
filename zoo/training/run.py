"""``zoo train``: compose the config, train, test with the best checkpoint, record the run."""
from __future__ import annotations

import csv
import dataclasses
import json
import logging
import os
import secrets
import signal
import sys
import time
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

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
from zoo.training.callbacks import AtomicCheckpointIO, LastCheckpoint, Throughput, TrainingInterrupted
from zoo.training.loggers import check_tracker_packages, make_loggers
from zoo.training.module import ZooModule
from zoo.training.evaluation import MetricSuite
from zoo.training.record import SUMMARY_FILE, RunRecord, run_identity
from zoo.training.rundir import LAST_CHECKPOINT, check_resume_config, claim_run_dir, resume_mode, write_run_files
from zoo.training.summary import build_summary, print_result, write_outputs
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
    for name in ("lightning.pytorch.utilities.rank_zero", "lightning.pytorch.accelerators.cuda"):
        logging.getLogger(name).setLevel(logging.WARNING)


def train(cfg: DictConfig) -> dict:
    """Run one training job in Hydra's output directory and return its summary.

    The directory is claimed first (:func:`zoo.training.rundir.claim_run_dir`: new or empty, or a run
    to resume; the entry has claimed it already) and locked once the config has passed its checks, so
    a refused start changes nothing in it. Once the run has started, ``summary.json`` records it as
    running, then finished, failed or interrupted. A resumed run (``resume``/``resume_mode``) continues
    from ``checkpoints/last.ckpt`` with the config checked against the run's own; a finished run under
    ``resume_mode=auto`` is skipped (its summary is returned).
    """
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    # Under DDP, ranks > 0 are relaunched into rank 0's run directory: only rank 0 (read from the
    # environment until the Trainer exists) checks, locks and writes files into it.
    writes = rank_zero_only.rank == 0
    with claim_run_dir(run_dir, writes, resume_mode(cfg)) as claim:
        if claim.verdict == "finished":
            summary = json.loads((run_dir / SUMMARY_FILE).read_text())
            print(f"zoo: {run_dir} finished already; skipped (resume_mode=auto)", file=sys.stderr)
            return summary
        resuming = claim.verdict == "resume"
        validate(cfg)
        if resuming and writes:
            check_resume_config(run_dir, cfg)  # before anything changes
        check_tracker_packages(cfg.logger)
        metrics = MetricSuite(cfg)
        data = ZooDataModule(cfg, run_dir)
        data.read()  # missing or malformed data is refused here, before the run directory is written
        claim.acquire()  # the lock: a config or data refused above has changed nothing in the directory
        quiet_lightning()
        L.seed_everything(cfg.seed, workers=True, verbose=False)
        if cfg.trainer.cpu_threads > 0:
            torch.set_num_threads(cfg.trainer.cpu_threads)
        record = RunRecord(run_dir, run_identity(cfg, metrics.monitor), writes)
        checkpoint = run_dir / LAST_CHECKPOINT if resuming else None
        previous: dict = {}
        if checkpoint is not None:
            previous = json.loads((run_dir / SUMMARY_FILE).read_text()) if (run_dir / SUMMARY_FILE).is_file() else {}
            step = int(torch.load(checkpoint, map_location="cpu", weights_only=False, mmap=True)["global_step"])
            record.resume_from(previous, step)
            log.info("resuming %s from %s (step %d)", run_dir, LAST_CHECKPOINT, step)
        record.start()  # summary.json first: from here on the directory holds a run
        with one_wandb_run_per_job():  # in a sweep too: each job's W&B run ends with the job
            try:
                if writes:
                    write_run_files(claim, cfg, [*metrics.metrics, *metrics.unavailable])
                with wandb_run_id(cfg, record, previous if checkpoint is not None else {}):
                    return _fit_and_test(cfg, data, run_dir, record, checkpoint)
            except TrainingInterrupted as stop:
                record.interrupt(stop)
                raise
            except Exception as error:
                record.fail(error)
                raise


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


def keep_earlier_metrics(loggers: list, run_dir: Path, step: int) -> None:
    """A resumed run appends to its ``metrics.csv``: Lightning's CSV logger deletes the file it finds, so its
    rows up to the checkpoint's ``step`` (later ones are logged again) are written back first."""
    path = run_dir / "metrics.csv"
    if not path.is_file():
        return
    with open(path, newline="") as file:
        reader = csv.DictReader(file)
        header, rows = list(reader.fieldnames or []), [row for row in reader]
    rows = [row for row in rows if not row.get("step") or int(float(row["step"])) < step]
    for logger in loggers:
        if isinstance(logger, CSVLogger):
            writer = logger.experiment  # made now: it deletes metrics.csv
            with open(path, "w", newline="") as file:
                out = csv.DictWriter(file, fieldnames=header)
                out.writeheader()
                out.writerows(rows)
            writer.metrics_keys = header


def _fit_and_test(cfg: DictConfig, data: ZooDataModule, run_dir: Path, record: RunRecord,
                  resume_from: Path | None = None) -> dict:
    data.setup()
    container = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    module = ZooModule(container, dataclasses.asdict(data.task.source_description()), data.task.target_vocab_size)

    monitor, mode = f"val/{module.metrics.monitor}", module.metrics.mode
    # best.ckpt by the monitored metric; last.ckpt, always the latest state, is LastCheckpoint's (listed after it:
    # Lightning runs checkpoint callbacks last, in this order, so last.ckpt records the newest best too).
    # Both decide at the end of each validation (not at the end of the training epoch): the state last.ckpt records
    # then is complete, and a run resumed at an epoch's end finds what they monitor.
    checkpoint = ModelCheckpoint(dirpath=str(run_dir / "checkpoints"), filename="best", monitor=monitor, mode=mode,
                                 save_on_train_epoch_end=False)
    last = LastCheckpoint(run_dir / "checkpoints", cfg.trainer.checkpoint_every_minutes)
    throughput = Throughput()
    loggers = make_loggers(cfg, run_dir)
    if resume_from is not None and rank_zero_only.rank == 0:
        keep_earlier_metrics(loggers, run_dir, record.resumes[-1]["step"] if record.resumes else 0)
    trainer = L.Trainer(
        **lightning_options(cfg.trainer),
        default_root_dir=str(run_dir),
        logger=loggers,
        callbacks=[checkpoint, last, EarlyStopping(monitor=monitor, mode=mode, patience=cfg.trainer.patience,
                                                      check_on_train_epoch_end=False),
                   throughput, record],
        plugins=[AtomicCheckpointIO()],  # a cut-off write never replaces a good checkpoint
        enable_model_summary=False,
        use_distributed_sampler=False,  # zoo's token-budget batch sampler shards batches across processes itself
        reload_dataloaders_every_n_epochs=1,  # each epoch has its own number of token-budget batches
    )
    started = time.perf_counter()
    try:
        # weights_only=False: the run's own checkpoints, which hold its config and random states as well
        trainer.fit(module, datamodule=data, ckpt_path=str(resume_from) if resume_from is not None else None,
                    weights_only=False)
    except SIGTERMException:  # SIGINT or SIGTERM (LastCheckpoint), or Lightning's own SIGTERM handling before training
        signum = last.signal or signal.SIGTERM
        raise TrainingInterrupted(signum, trainer.global_step, saved=last.saved_on_signal) from None
    train_seconds = time.perf_counter() - started
    if cfg.test:  # test=false (a search's trial): the test split stays unseen, the summary says so
        trainer.test(module, datamodule=data, ckpt_path=checkpoint.best_model_path or None, verbose=False,
                     weights_only=False)

    test = module.results.get("test")
    summary = record.finish(build_summary(cfg, module, data.task, trainer, checkpoint, throughput, train_seconds))
    if trainer.is_global_zero:
        item_scores = module.metrics.item_scores(test["hypotheses"], [i.references for i in test["items"]]) if test else {}
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
        k: v
        for k, v in options.items()
        if k not in ZOO_TRAINER_FIELDS and not (k.startswith("limit_") and v == 1.0)
    }
