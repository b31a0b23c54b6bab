"""Data throughput: tokenizers, and the share of a training step spent waiting for data."""

from __future__ import annotations

import dataclasses
import tempfile
import time

import torch

from speed.common import Context, Row, composed_config, median

TOKENIZERS = ("char", "word", "bpe")


def synthetic_sources(ctx: Context) -> list[str]:
    """Source sentences of the built-in synthetic dataset (3-30 words of a small English)."""
    from zoo.registry import build, default_config

    size = ctx.size(500, 8000)
    splits = build("dataset", default_config("dataset", "synthetic", train_size=size)).splits()
    return [item.source for item in splits["train"]]


def measure_tokenizers(ctx: Context) -> list[Row]:
    """Sentences/s of each tokenizer plugin's encode over the synthetic training sources,
    after training it on them: the work a run does to encode its data. No reference:
    the numbers say whether tokenising could ever hold training up (compare tokens/s of
    training). Median of several passes."""
    from zoo.registry import build, default_config

    texts = synthetic_sources(ctx)
    rows = []
    for name in TOKENIZERS:
        tokenizer = build("tokenizer", default_config("tokenizer", name))
        tokenizer.train(texts)
        tokenizer.encode(texts)  # warm-up
        times = []
        for _ in range(ctx.size(2, 5)):
            start = time.perf_counter()
            tokenizer.encode(texts)
            times.append(time.perf_counter() - start)
        rows.append(
            Row(
                f"tokenisation, {name} tokenizer ({len(texts):,} synthetic sentences)",
                f"{len(texts) / median(times):,.0f} sentences/s",
            )
        )
    return rows


def measure_data_wait(ctx: Context) -> list[Row]:
    """Share of a text training step spent waiting for the next batch: the default run
    (synthetic translation, word tokens, tokens frontend, GRU model) with a real
    ZooDataModule and ZooModule; DataLoader next() is timed apart from the step
    (loss, backward, AdamW), as Lightning's loop would call them, for several batches.
    The share is total wait / (total wait + total step)."""
    from zoo.data.datamodule import ZooDataModule
    from zoo.training.module import ZooModule

    overrides = ctx.size(["dataset.train_size=500", "dataset.val_size=20", "dataset.test_size=20"], [])
    cfg = composed_config(overrides)
    with tempfile.TemporaryDirectory() as run_dir:
        data = ZooDataModule(cfg, run_dir)
        data.setup()
        module = ZooModule(cfg, dataclasses.asdict(data.task.source_description()), data.task.target_vocab_size)
        module.to(ctx.device).train()
        optimiser = torch.optim.AdamW(module.parameters(), lr=1e-3)
        loader = iter(data.train_dataloader())
        waits, steps = [], []
        for _ in range(ctx.size(5, 40)):
            tick = time.perf_counter()
            batch = {k: v.to(ctx.device) if torch.is_tensor(v) else v for k, v in next(loader).items()}
            tock = time.perf_counter()
            module._loss(batch).backward()  # training_step without Lightning's logging
            optimiser.step()
            optimiser.zero_grad()
            ctx.sync()
            waits.append(tock - tick)
            steps.append(time.perf_counter() - tock)
    share = sum(waits) / (sum(waits) + sum(steps))
    return [
        Row(
            f"waiting for data, text run (default synthetic translation, {len(steps)} steps)",
            f"{share:.2%} of step time",
            f"data {median(waits) * 1e3:.1f} ms, step {median(steps) * 1e3:.0f} ms (medians)",
            share,
            "< 5%",
            share < 0.05,
        )
    ]


def measure_caption_data(ctx: Context) -> list[Row]:
    """Images: bench_caption_data.py measures the same share for captioning configs; it needs
    a dataset setup of its own, so the suite points to it and to its recorded numbers."""
    return [
        Row(
            "waiting for data, image captioning",
            "see benchmarks/bench_caption_data.py",
            "docs/results.md: 0.1-0.3% of the step (scenes, Flickr8k)",
            None,
            "< 5%",
            None,
            "python benchmarks/bench_caption_data.py task=captioning",
        )
    ]
