"""The loggers of a run: CSV always; Weights & Biases (offline unless told otherwise), TensorBoard, MLflow if asked."""

from __future__ import annotations

import csv
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger, WandbLogger
from omegaconf import DictConfig

from zoo.errors import ZooError
from zoo.run.layout import METRICS_FILE
from zoo.run.tracking import components, flat_config, run_group, run_name, run_tags


@contextmanager
def unlogged(trainer: Any) -> Iterator[None]:
    """Evaluate without the loggers: the averaged weights' validation goes to ``summary.json`` only, not onto the
    validation curve (``metrics.csv`` and the trackers) as a second point at the last step."""
    loggers, trainer.loggers = trainer.loggers, []
    try:
        yield
    finally:
        trainer.loggers = loggers


def wandb_mode(logger_cfg: Any) -> str:
    """``logger.mode`` if set, else ``$WANDB_MODE``, else offline: nothing leaves the machine unless asked."""
    return logger_cfg["mode"] or os.environ.get("WANDB_MODE") or "offline"


def make_loggers(cfg: DictConfig, run_dir: Path, wandb_run_id: str | None = None) -> list:
    """CSV into the run directory always; each tracker switched on in ``logger`` beside it (W&B's run with the id
    the run's record names: :func:`zoo.run.tracking.wandb_run_id`)."""
    loggers: list = [CSVLogger(save_dir=str(run_dir), name="", version="")]
    if cfg.logger.wandb:
        loggers.append(wandb_logger(cfg, run_dir, wandb_run_id))
    if cfg.logger.tensorboard:
        loggers.append(tensorboard_logger(cfg, run_dir))
    if cfg.logger.mlflow:
        loggers.append(mlflow_logger(cfg, run_dir))
    return loggers


def wandb_logger(cfg: DictConfig, run_dir: Path, run_id: str | None) -> Any:
    """The W&B run ``run_id`` in ``run_dir/wandb/``: grouped by sweep or experiment, tagged, and configured once,
    flat, for filtering (Lightning's later call with the module's nested hyperparameters is left out)."""
    return FlatConfigWandbLogger(
        id=run_id,
        project=cfg.logger.project,
        save_dir=str(run_dir),
        name=run_name(run_dir),
        mode=wandb_mode(cfg.logger),
        group=run_group(cfg),
        tags=run_tags(cfg),
        job_type="train",
        config=flat_config(cfg),
    )


def tensorboard_logger(cfg: DictConfig, run_dir: Path) -> Any:
    """TensorBoard in ``run_dir/tensorboard/``, its HParams the flat config (as W&B's) against the run's final
    metrics, written once the run has them (``log_results``, from :func:`zoo.run.tracking.send_results`); Lightning's
    call at the start, with the module's nested hyperparameters and no metric, is left out."""
    return HParamsTensorBoardLogger(
        flat_config(cfg), save_dir=str(run_dir), name="tensorboard", version="", default_hp_metric=False
    )


class FlatConfigWandbLogger(WandbLogger):
    """W&B's logger, configured once, flat, when its run starts (``config=``)."""

    def log_hyperparams(self, params: Any) -> None:
        """Nothing: the module's nested hyperparameters (``cfg``), which Lightning sends, would be a second copy."""


class HParamsTensorBoardLogger(TensorBoardLogger):
    """TensorBoard's logger whose HParams are ``config`` against the run's final metrics (:meth:`log_results`)."""

    def __init__(self, config: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.config = config

    def log_hyperparams(self, params: Any, metrics: dict | None = None, step: int | None = None) -> None:
        """Only the call with results: Lightning's at the start, the module's hyperparameters without a metric,
        would write none and keep the nested ``cfg`` as the run's hparams."""
        if metrics is not None:
            super().log_hyperparams(params, metrics, step)

    def log_results(self, metrics: dict[str, float], step: int) -> None:
        """The HParams: the config against ``metrics``, whose scalars are written at ``step``."""
        self.log_hyperparams(self.config, metrics, step)


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


#: Seconds an MLflow tracking server has to accept a connection before the run is refused.
TRACKING_TIMEOUT = 3.0


class TrackingServerUnreachable(ZooError):
    """The MLflow tracking server a run would log to does not answer."""


def check_tracking_server(logger_cfg: Any) -> None:
    """Refuse a run whose MLflow tracking server (an http or https ``logger.tracking_uri``) does not accept a
    connection within :data:`TRACKING_TIMEOUT`: MLflow would retry each request for minutes without a word."""
    uri = logger_cfg["tracking_uri"]
    where = urlsplit(uri or "")
    if not logger_cfg["mlflow"] or where.scheme not in ("http", "https"):
        return
    try:
        port = where.port or (443 if where.scheme == "https" else 80)
        socket.create_connection((where.hostname, port), timeout=TRACKING_TIMEOUT).close()
    except (OSError, ValueError) as error:
        reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
        raise TrackingServerUnreachable(
            f"logger.tracking_uri={uri}: the MLflow tracking server does not answer ({reason}); start it, or log "
            "offline into the run directory (mlruns/) with logger.tracking_uri=null"
        ) from None


def keep_earlier_metrics(loggers: list, run_dir: Path, step: int | None) -> None:
    """A resumed run appends to its ``metrics.csv``: Lightning's CSV logger deletes the file it finds, so its
    rows up to the checkpoint's ``step`` (later ones are logged again) are written back first. ``step`` None:
    training had ended, every row but the test's is kept."""
    path = run_dir / METRICS_FILE
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
