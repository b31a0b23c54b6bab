"""Checkpoint files read back: their weights, compared bit for bit, and where a run keeps its weight snapshots."""

from __future__ import annotations

from pathlib import Path

import torch


def weights(path: Path) -> dict[str, torch.Tensor]:
    """The state dict a checkpoint file holds."""
    return torch.load(path, map_location="cpu", weights_only=True)["state_dict"]


def assert_bit_identical(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    """The same names, dtypes and values, bit for bit."""
    assert a.keys() == b.keys()
    for key in a:
        assert a[key].dtype == b[key].dtype and torch.equal(a[key], b[key]), key


def snapshot(run_dir: Path, step: int) -> Path:
    """The weight snapshot a run keeps for averaging (``trainer.average_last``) from ``step``."""
    return run_dir / "checkpoints" / "snapshots" / f"step-{step:08d}.ckpt"
