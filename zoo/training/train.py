"""``zoo train``'s job, in the order it runs: prepare, build, fit, test, record.

The job's folder is claimed and its books kept by :func:`zoo.run.job.run_job` (the lock, signals, how the job ends);
here is what the job does:

1. prepare: check the config (:func:`zoo.training.preflight.validate`), then resolve what the job does with the run
   already in its directory (:func:`zoo.run.resume.plan_resume`). Nothing is written yet.
2. build: read the data (bad data is refused here, the directory still untouched), lock the directory, build the
   model (from ``init_from``'s weights where a run starts: :mod:`zoo.training.init_from`) and measure its cost and a
   budget's layout (a budget it cannot spend is refused here, the directory still untouched), then start the record
   (``summary.json`` says ``running``: from here on the directory holds a run) with the run's files, and build
   Lightning's Trainer (:mod:`zoo.training.trainer`).
3. fit: train, from ``last.ckpt`` when resuming; record what training measured (:mod:`zoo.training.measures`).
4. test: with checkpoint averaging, average the kept snapshots and validate the average
   (:func:`zoo.training.averaging.average_snapshots`); score it, else the best checkpoint, on the test split (unless
   ``test=false``).
5. record: the final ``summary.json``, the test outputs, the trackers' results and the printed table.
"""

from __future__ import annotations

import dataclasses
import logging

import lightning as L
import torch
from lightning.pytorch.utilities.exceptions import SIGTERMException
from omegaconf import DictConfig, OmegaConf

from zoo.config.schema import ResumeMode
from zoo.data.datamodule import ZooDataModule
from zoo.run.identity import run_identity
from zoo.run.job import RunFolder
from zoo.run.layout import LAST_CHECKPOINT
from zoo.run.resume import Resume, plan_resume, resume_mode
from zoo.run.summary import print_result, write_outputs
from zoo.run.tracking import send_results
from zoo.training.averaging import average_snapshots
from zoo.training.budget import write_compute_file
from zoo.training.compute import read_compute_file
from zoo.training.evaluation import MetricSuite
from zoo.training.init_from import check_initial, read_initial, start_from, validate_start
from zoo.training.measures import test_summary, training_summary
from zoo.training.memory import memory_refusal
from zoo.training.module import ZooModule
from zoo.training.preflight import validate
from zoo.training.trainer import Built, build_trainer, compute_layout, quiet_lightning

log = logging.getLogger(__name__)


def train(cfg: DictConfig, run: RunFolder) -> dict:
    """Run one training job in its claimed folder ``run`` and return its summary."""
    resume, metrics = prepare(cfg, run)
    data = read_data(cfg, run, resume)
    module = build_module(cfg, data, resume)
    saved = read_compute_file(run.path) if resume.resuming else None
    cost, layout = compute_layout(cfg.trainer, module, data, saved)
    run.start_record(run_identity(cfg, metrics.monitor), resume, [*metrics.metrics, *metrics.unavailable])
    if resume.resuming:
        only_test = ": training had ended, only the test runs" if resume.tests_only else ""
        log.info("resuming %s from %s (step %d)%s", run.path, LAST_CHECKPOINT, resume.step, only_test)
    data.setup()  # the codecs it fitted saved in the run
    if saved is None and run.writes:
        write_compute_file(run.path, cost, layout)
    built = build_trainer(cfg, data, module, run, resume, cost, layout)
    device = str(built.trainer.strategy.root_device.type)
    with memory_refusal("training", cfg.data.max_tokens, device):
        fit(built, resume)
    with memory_refusal("testing", cfg.data.max_tokens, device):
        test(built)
    return record_results(built)


def prepare(cfg: DictConfig, run: RunFolder) -> tuple[Resume, MetricSuite]:
    """Check the config and resolve the resume; only reads (a run stopped before its first checkpoint is emptied,
    under the lock, to start again). A job that may have resumed checks ``init_from`` once it knows it starts."""
    validate(cfg)
    metrics = MetricSuite(cfg)
    resume = plan_resume(cfg, run.claim)
    if cfg.init_from and not resume.resuming and resume_mode(cfg) is not ResumeMode.never:
        read_initial(cfg)
    return resume, metrics


def read_data(cfg: DictConfig, run: RunFolder, resume: Resume) -> ZooDataModule:
    """Read the splits and fit the codecs in memory, then lock the directory: data refused here (or weights to start
    from whose vocabulary is not the codecs'), like a config refused before, has changed nothing in it. Seeds and
    threads are set for the whole job."""
    data = ZooDataModule(cfg, run.path)
    data.read()
    if cfg.init_from and not resume.resuming and run.writes:  # DDP ranks > 0 load rank 0's codecs at setup
        check_initial(cfg, data.task)
    run.claim.acquire()
    quiet_lightning()
    L.seed_everything(cfg.seed, workers=True, verbose=False)
    if cfg.trainer.cpu_threads > 0:
        torch.set_num_threads(cfg.trainer.cpu_threads)
    return data


def build_module(cfg: DictConfig, data: ZooDataModule, resume: Resume) -> ZooModule:
    """The model (from ``init_from``'s weights where a run starts) over the selected rows of every split; nothing is
    written yet."""
    data.select()
    container = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    module = ZooModule(container, dataclasses.asdict(data.task.source_description()), data.task.target_vocab_size)
    if cfg.init_from and not resume.resuming:
        start_from(module, container, data.task)
    elif cfg.scst.enabled and not resume.resuming:
        log.warning(
            "scst.enabled without init_from: self-critical training starts from random weights, whose "
            "samples earn almost no reward; pass init_from=RUN (a run trained with cross-entropy)"
        )
    return module


def fit(built: Built, resume: Resume) -> None:
    """Train (on from ``last.ckpt`` when resuming) and record what training measured. A signal stops training once
    ``last.ckpt`` is written; one that came as training ended leaves only the test to do."""
    ckpt_path = str(built.run_dir / LAST_CHECKPOINT) if resume.resuming else None
    if built.cfg.init_from and not resume.resuming:
        validate_start(built)
    interruptions = built.run.interruptions
    try:
        # weights_only=False: the run's own checkpoints, which hold its config and random states as well
        built.trainer.fit(built.module, datamodule=built.data, ckpt_path=ckpt_path, weights_only=False)
    except SIGTERMException:  # the stop LastCheckpoint asked for, once last.ckpt was written
        raise interruptions.stopped(saved=built.last.saved_on_signal) from None
    built.record.training_ended(training_summary(built.module, built.trainer, built.best, built.throughput))
    if interruptions.signal is not None:
        raise interruptions.stopped(saved=True, trained=True)


def test(built: Built) -> None:
    """Score the best checkpoint, or the average of the kept snapshots where validation prefers it, on the test
    split; ``test=false`` (a search's trial) leaves the split unseen."""
    weights = (average_snapshots(built) if built.snapshots else None) or built.best.best_model_path or None
    built.run.interruptions.enter("test")
    if built.cfg.test:
        built.trainer.test(built.module, datamodule=built.data, ckpt_path=weights, verbose=False, weights_only=False)
    built.run.interruptions.enter("outputs")


def record_results(built: Built) -> dict:
    """The final ``summary.json``; from the process that writes the run, the test outputs with per-item scores,
    the trackers' samples and final metrics, and the printed result."""
    cfg, module, task, trainer = built.cfg, built.module, built.data.task, built.trainer
    test = module.results.get("test")
    summary = built.record.finish(test_summary(cfg, module, task, trainer))
    if trainer.is_global_zero:
        references = [item.references for item in test["items"]] if test else []
        item_scores = module.metrics.item_scores(test["hypotheses"], references) if test else {}
        write_outputs(built.run_dir, test, item_scores, task, cfg.samples)
        send_results(trainer, summary, test, task, cfg.samples)
        print_result(summary, built.run_dir)
    return summary
