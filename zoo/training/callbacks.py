"""Lightning callbacks that measure a run."""
from __future__ import annotations

import time

import torch
from lightning.pytorch.callbacks import Callback

from zoo.contracts import PAD


class Throughput(Callback):
    """Counts target tokens and the wall time spent in training batches."""

    def __init__(self) -> None:
        self.tokens = 0
        self.seconds = 0.0
        self._start = 0.0

    def on_train_batch_start(self, trainer, module, batch, batch_idx) -> None:
        self._start = time.perf_counter()

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        self.seconds += time.perf_counter() - self._start
        self.tokens += int((batch["target_out"] != PAD).sum())
