"""Check a composed config before any data loads or anything trains."""
from __future__ import annotations

from omegaconf import DictConfig


def validate(cfg: DictConfig) -> None:
    """Raise a one-line :class:`~zoo.errors.ZooError` naming the field when an option is out of range."""
