"""The loggers of a run: CSV always, Weights & Biases when asked, offline unless told otherwise."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from lightning.pytorch.loggers import CSVLogger
from omegaconf import DictConfig, OmegaConf


def wandb_mode(logger_cfg: Any) -> str:
    """``logger.mode`` if set, else ``$WANDB_MODE``, else offline: nothing leaves the machine unless asked."""
    return logger_cfg["mode"] or os.environ.get("WANDB_MODE") or "offline"


def make_loggers(cfg: DictConfig, run_dir: Path) -> list:
    """CSV into the run directory always; W&B beside it when ``logger.wandb`` is on."""
    loggers = [CSVLogger(save_dir=str(run_dir), name="", version="")]
    if cfg.logger.wandb:
        from lightning.pytorch.loggers import WandbLogger

        loggers.append(
            WandbLogger(
                project=cfg.logger.project,
                save_dir=str(run_dir),
                name=run_dir.name,
                mode=wandb_mode(cfg.logger),
                config=OmegaConf.to_container(cfg, resolve=True, enum_to_str=True),
            )
        )
    return loggers
