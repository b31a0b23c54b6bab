"""What training and the test measured, read off Lightning's objects for the run's record (``summary.json``):
parameters, throughput, epochs and steps once training ends; the test's scores, breakdowns and latency (milliseconds
to decode one item, the way a user would call the model) once it has run."""

from __future__ import annotations

import dataclasses
import platform
import time
from collections.abc import Sequence
from typing import Any

import torch
from omegaconf import DictConfig

from zoo.contracts import Item, Task
from zoo.decoding import generate


def parameter_counts(module: torch.nn.Module) -> dict[str, int]:
    """Trainable parameters, and frozen weights (frozen parameters plus persistent buffers such as a reservoir)."""
    trainable = sum(p.numel() for p in module.parameters() if p.requires_grad)
    frozen = sum(p.numel() for p in module.parameters() if not p.requires_grad)
    parameter_storage = {p.data_ptr() for p in module.parameters()}  # tied weights appear twice in a state_dict
    frozen += sum(t.numel() for t in module.state_dict().values() if t.data_ptr() not in parameter_storage)
    return {"trainable": trainable, "frozen": frozen}


def training_summary(module: Any, trainer: Any, checkpoint: Any, throughput: Any) -> dict:
    """What training measured, once it has ended: ``best_val`` is the monitored metric's best validation score
    (the one that chose the checkpoint). Its time and peak memory are the run record's, summed over segments."""
    return {
        "best_val": float(checkpoint.best_model_score) if checkpoint.best_model_score is not None else None,
        "parameters": parameter_counts(module.model),
        "train_tokens": throughput.tokens,
        "tokens_per_second": round(throughput.tokens / throughput.seconds, 1) if throughput.seconds else None,
        "epochs": epochs_trained(trainer),
        "steps": trainer.global_step,
        "best_checkpoint": checkpoint.best_model_path or None,
    }


def test_summary(cfg: DictConfig, module: Any, task: Any, trainer: Any) -> dict:
    """What the test measured. ``test`` holds every metric's score with its direction and signature (empty, and
    ``tested`` false, when ``test=false`` kept the test split unseen); ``latency_ms`` the median milliseconds to
    decode one test item alone, greedy and beam, over the first ``latency_items`` (None for 0)."""
    suite = module.metrics
    test = module.results.get("test")
    # Lightning hands the model back on the CPU after testing: latency is measured, and the
    # machine recorded, on the device the run trained on.
    device = trainer.strategy.root_device
    module.model.to(device)
    described = suite.describe() if test else {}  # a signature is known once a metric has scored (sacrebleu's nrefs)
    items = test["items"][: cfg.latency_items] if test else []
    return {
        "tested": bool(cfg.test),
        "test": {name: {"score": score, **described[name]} for name, score in test["scores"].items()} if test else {},
        "breakdowns": task.breakdowns(test["items"], test["hypotheses"]) if test else {},
        "latency_ms": {
            strategy: latency_ms(module.model, task, items, module.test_decode, strategy)
            for strategy in ("greedy", "beam")
        },
        "decode": str(cfg.decode.strategy),
        "machine": {"platform": platform.platform(), "torch": torch.__version__, "device": str(device)},
    }


def epochs_trained(trainer: Any) -> float:
    """Epochs of training, the last one as the fraction of its batches that ran when a limit (``max_time``,
    ``max_steps``) or a signal stopped it: Lightning counts an epoch cut short as a whole one."""
    whole = trainer.current_epoch
    done, batches = trainer.fit_loop.epoch_loop.batch_progress.current.completed, trainer.num_training_batches
    if whole and 0 < done < batches:
        return round(whole - 1 + done / batches, 2)
    return whole


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
