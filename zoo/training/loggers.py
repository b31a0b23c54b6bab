"""Weights & Biases settings shared by training and the tools that log beside a run."""
from __future__ import annotations

import os
from typing import Any


def wandb_mode(logger_cfg: Any) -> str:
    """``logger.mode`` if set, else ``$WANDB_MODE``, else offline: nothing leaves the machine unless asked."""
    return logger_cfg["mode"] or os.environ.get("WANDB_MODE") or "offline"
