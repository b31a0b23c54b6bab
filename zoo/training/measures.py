"""Inference latency: milliseconds to decode one item, the way a user would call the model."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

import torch

from zoo.contracts import Item, Task
from zoo.decoding import generate


@torch.no_grad()
def latency_ms(model: Any, task: Task, items: Sequence[Item], decode_cfg: Any, strategy: str) -> float | None:
    """Median wall milliseconds to encode and decode one item alone (batch of one) with ``strategy``, over
    ``items`` (a run times its first ``latency_items`` test items: 32 by default, enough for a stable median on a
    CPU, few enough to cost seconds); None without items.

    One item at a time because that is what an interactive user waits for; the
    median, because a shared machine gives the odd slow call. The model is put in
    eval mode for the measurement and its mode restored.
    """
    if not items:
        return None
    decode = dataclasses.replace(decode_cfg, strategy=strategy)
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    timings = []
    try:
        for item in items:
            started = time.perf_counter()
            batch = task.collate_sources(task.encode_sources([item.source])).to(device)
            generate(model, batch, decode, max_len=task.output_limit(batch))
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            timings.append(time.perf_counter() - started)
    finally:
        model.train(was_training)
    return round(1000 * sorted(timings)[len(timings) // 2], 2)
