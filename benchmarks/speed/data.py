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


#: ``data.num_workers`` values the data wait is measured at: batches built in the training process, and by two
#: DataLoader worker processes while the step runs.
WORKERS = (0, 2)


def measure_data_wait(ctx: Context) -> list[Row]:
    """Share of a text training step spent waiting for the next batch, at each of :data:`WORKERS`: the default
    run (synthetic translation, word tokens, tokens frontend, GRU model) with a real ZooDataModule and ZooModule;
    DataLoader next() and the copy to the device are timed apart from the step (loss, backward, AdamW), as
    Lightning's loop would call them. The first steps are warm-up (workers starting, kernels loading) and are not
    counted. The share is total wait / (total wait + total step)."""
    from omegaconf import OmegaConf

    from zoo.data.datamodule import ZooDataModule
    from zoo.training.module import ZooModule

    small = ctx.size(["dataset.train_size=500", "dataset.val_size=20", "dataset.test_size=20"], [])
    rows = []
    for workers in WORKERS:
        cfg = composed_config([*small, f"data.num_workers={workers}"])
        with tempfile.TemporaryDirectory() as run_dir:
            data = ZooDataModule(OmegaConf.create(cfg), run_dir)  # the data module reads a DictConfig, as a run's
            data.setup()
            source = dataclasses.asdict(data.task.source_description())
            module = ZooModule(cfg, source, data.task.target_vocab_size).to(ctx.device).train()
            optimiser = torch.optim.AdamW(module.parameters(), lr=1e-3)
            loader = iter(data.train_dataloader())
            waits, steps = [], []
            warmup = 3
            for _ in range(warmup + ctx.size(5, 40)):
                tick = time.perf_counter()
                batch = next(loader)
                batch = {k: v.to(ctx.device, non_blocking=True) if torch.is_tensor(v) else v for k, v in batch.items()}
                tock = time.perf_counter()
                module._loss(batch).backward()  # training_step without Lightning's logging
                optimiser.step()
                optimiser.zero_grad()
                ctx.sync()
                waits.append(tock - tick)
                steps.append(time.perf_counter() - tock)
            waits, steps = waits[warmup:], steps[warmup:]
            del loader  # its workers stop
        share = sum(waits) / (sum(waits) + sum(steps))
        rows.append(
            Row(
                f"waiting for data, text run (default synthetic translation, data.num_workers={workers}, "
                f"{len(steps)} steps)",
                f"{share:.2%} of step time",
                f"data {median(waits) * 1e3:.1f} ms, step {median(steps) * 1e3:.0f} ms (medians)",
                share,
                "<= 2%",
                share <= 0.02,
            )
        )
    return rows


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
