"""The loggers of a run: CSV always; Weights & Biases (offline unless told otherwise), TensorBoard and MLflow when asked."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from lightning.pytorch.loggers import CSVLogger
from omegaconf import DictConfig

from zoo.errors import ZooError
from zoo.training.tracking import components, flat_config, run_group, run_name, run_tags

#: Trackers whose packages are optional: the switch in ``logger``, the modules any of which will do, the extra.
OPTIONAL_TRACKERS = {"tensorboard": ("tensorboard", "tensorboardX"), "mlflow": ("mlflow",)}


class MissingTrackerPackage(ZooError):
    """A tracker was asked for but its package is not installed."""


def wandb_mode(logger_cfg: Any) -> str:
    """``logger.mode`` if set, else ``$WANDB_MODE``, else offline: nothing leaves the machine unless asked."""
    return logger_cfg["mode"] or os.environ.get("WANDB_MODE") or "offline"


def check_tracker_packages(logger_cfg: Any) -> None:
    """Refuse a run before it starts when a chosen tracker's package is missing, naming the extra that installs it."""
    for tracker, modules in OPTIONAL_TRACKERS.items():
        if logger_cfg[tracker] and not any(importlib.util.find_spec(module) for module in modules):
            raise MissingTrackerPackage(
                f"logger.{tracker}=true needs the {modules[0]} package: pip install 'zoo[{tracker}]'"
            )


def make_loggers(cfg: DictConfig, run_dir: Path) -> list:
    """CSV into the run directory always; each tracker switched on in ``logger`` beside it."""
    loggers: list = [CSVLogger(save_dir=str(run_dir), name="", version="")]
    if cfg.logger.wandb:
        loggers.append(wandb_logger(cfg, run_dir))
    if cfg.logger.tensorboard:
        from lightning.pytorch.loggers import TensorBoardLogger

        loggers.append(
            TensorBoardLogger(save_dir=str(run_dir), name="tensorboard", version="", default_hp_metric=False)
        )
    if cfg.logger.mlflow:
        loggers.append(mlflow_logger(cfg, run_dir))
    return loggers


def wandb_logger(cfg: DictConfig, run_dir: Path) -> Any:
    """A W&B run in ``run_dir/wandb/``: grouped by sweep or experiment, tagged and configured for filtering."""
    from lightning.pytorch.loggers import WandbLogger

    return WandbLogger(
        project=cfg.logger.project,
        save_dir=str(run_dir),
        name=run_name(run_dir),
        mode=wandb_mode(cfg.logger),
        group=run_group(cfg),
        tags=run_tags(cfg),
        job_type="train",
        config=flat_config(cfg),
    )


def mlflow_logger(cfg: DictConfig, run_dir: Path) -> Any:
    """An MLflow run, by default in a file store in ``run_dir/mlruns/``; tagged with the components and group."""
    from lightning.pytorch.loggers import MLFlowLogger

    uri = cfg.logger.tracking_uri or f"file:{run_dir.resolve() / 'mlruns'}"
    if uri.startswith("file:"):
        # MLflow 3 refuses a file store unless this says it is wanted; a run directory keeps its own small store.
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    group = run_group(cfg)
    return MLFlowLogger(
        experiment_name=cfg.logger.project,
        run_name=run_name(run_dir),
        tracking_uri=uri,
        tags={**components(cfg), **({"group": group} if group else {})},
    )
