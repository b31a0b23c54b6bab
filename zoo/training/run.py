"""``zoo train``: compose the config, train, test with the best checkpoint, record the run."""
from __future__ import annotations

import dataclasses
import logging
import time
import warnings
from pathlib import Path

import lightning as L
import torch
from hydra.core.hydra_config import HydraConfig
from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint
from lightning.pytorch.utilities import rank_zero_only
from omegaconf import DictConfig, OmegaConf

from zoo.config.validate import validate
from zoo.data.datamodule import ZooDataModule
from zoo.training.callbacks import Throughput
from zoo.training.loggers import check_tracker_packages, make_loggers
from zoo.training.module import ZooModule
from zoo.training.evaluation import MetricSuite
from zoo.training.record import RunRecord, run_identity
from zoo.training.rundir import claim_run_dir, write_run_files
from zoo.training.summary import build_summary, print_result, write_outputs
from zoo.training.tracking import one_wandb_run_per_job, send_results

log = logging.getLogger(__name__)


def quiet_lightning() -> None:
    """Hide Lightning's advertising and notices that do not apply to a zoo run."""
    warnings.filterwarnings("ignore", message=".*exists and is not empty.*")
    warnings.filterwarnings("ignore", message=".*is smaller than the logging interval.*")
    warnings.filterwarnings("ignore", message=".*does not have many workers.*")
    warnings.filterwarnings("ignore", message=".*LeafSpec.*")
    # Every DDP rank evaluates the whole validation and test set, so their metrics agree: nothing to sync.
    warnings.filterwarnings("ignore", message=".*when logging on epoch level in distributed setting.*")
    for name in ("lightning.pytorch.utilities.rank_zero", "lightning.pytorch.accelerators.cuda"):
        logging.getLogger(name).setLevel(logging.WARNING)


def train(cfg: DictConfig) -> dict:
    """Run one training job in Hydra's output directory and return its summary.

    The directory is claimed first (:func:`zoo.training.rundir.claim_run_dir`: new or empty; the entry
    has claimed it already) and locked once the config has passed its checks, so a refused start
    changes nothing in it. Once the run has started, ``summary.json`` records it as running, then
    finished or failed.
    """
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    # Under DDP, ranks > 0 are relaunched into rank 0's run directory: only rank 0 (read from the
    # environment until the Trainer exists) checks, locks and writes files into it.
    writes = rank_zero_only.rank == 0
    with claim_run_dir(run_dir, writes) as claim:
        validate(cfg)
        check_tracker_packages(cfg.logger)
        metrics = MetricSuite(cfg)
        claim.acquire()  # the lock: a config refused above has changed nothing in the directory
        quiet_lightning()
        L.seed_everything(cfg.seed, workers=True, verbose=False)
        if cfg.trainer.cpu_threads > 0:
            torch.set_num_threads(cfg.trainer.cpu_threads)
        record = RunRecord(run_dir, run_identity(cfg, metrics.monitor), writes)
        record.start()  # summary.json first: from here on the directory holds a run
        with one_wandb_run_per_job():  # in a sweep too: each job's W&B run ends with the job
            try:
                if writes:
                    write_run_files(claim, cfg, [*metrics.metrics, *metrics.unavailable])
                return _fit_and_test(cfg, run_dir, record)
            except Exception as error:
                record.fail(error)
                raise


def _fit_and_test(cfg: DictConfig, run_dir: Path, record: RunRecord) -> dict:
    data = ZooDataModule(cfg, run_dir)
    data.setup()
    container = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    module = ZooModule(container, dataclasses.asdict(data.task.source_description()), data.task.target_vocab_size)

    monitor, mode = f"val/{module.metrics.monitor}", module.metrics.mode
    checkpoint = ModelCheckpoint(
        dirpath=str(run_dir / "checkpoints"), filename="best", monitor=monitor, mode=mode, save_last=True
    )
    throughput = Throughput()
    trainer = L.Trainer(
        **lightning_options(cfg.trainer),
        default_root_dir=str(run_dir),
        logger=make_loggers(cfg, run_dir),
        callbacks=[checkpoint, EarlyStopping(monitor=monitor, mode=mode, patience=cfg.trainer.patience), throughput,
                   record],
        enable_model_summary=False,
        use_distributed_sampler=False,  # zoo's token-budget batch sampler shards batches across processes itself
        reload_dataloaders_every_n_epochs=1,  # each epoch has its own number of token-budget batches
    )
    started = time.perf_counter()
    trainer.fit(module, datamodule=data)
    train_seconds = time.perf_counter() - started
    trainer.test(module, datamodule=data, ckpt_path="best" if checkpoint.best_model_path else None, verbose=False)

    test = module.results.get("test")
    summary = record.finish(build_summary(cfg, module, data.task, trainer, checkpoint, throughput, train_seconds))
    if trainer.is_global_zero:
        item_scores = module.metrics.item_scores(test["hypotheses"], [i.references for i in test["items"]]) if test else {}
        write_outputs(run_dir, test, item_scores, data.task, cfg.samples)
        send_results(trainer, summary, test, data.task, cfg.samples)  # samples and final metrics to the trackers
        print_result(summary, run_dir)
    return summary


# TrainerConfig fields that are zoo's own; every other field is passed to lightning.Trainer as it is.
ZOO_TRAINER_FIELDS = ("patience", "cpu_threads")


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
