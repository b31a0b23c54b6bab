"""How much of a captioning training step is spent waiting for data.

For a captioning config (any ``zoo train`` overrides), the data module is set up
as a run sets it up (images decoded and resized once), then ``--batches``
training batches are drawn and each is used for one real optimiser step of the
config's model. Reported: the time to set the data up (decoding every image
once), the median time to get a batch from the loader, the median time of a
step, and the share of the two spent waiting for data.

    python benchmarks/bench_caption_data.py task=captioning [OVERRIDES...] [--batches 30] [--threads 1]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import tempfile
import time

import torch
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

import zoo.config.schema  # noqa: F401  (stores the schema)
from zoo.data.datamodule import ZooDataModule
from zoo.registry.discovery import discover
from zoo.training.module import ZooModule


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("overrides", nargs="*")
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    discover()
    with initialize_config_module("zoo.conf", version_base="1.3"):
        cfg = compose("config", overrides=args.overrides)
    with tempfile.TemporaryDirectory() as run_dir:
        started = time.perf_counter()
        data = ZooDataModule(cfg, run_dir)
        data.setup()
        setup_seconds = time.perf_counter() - started
        container = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
        module = ZooModule(container, dataclasses.asdict(data.task.source_description()), data.task.target_vocab_size)
        optimiser = torch.optim.AdamW(module.parameters(), lr=1e-3)
        loader = iter(data.train_dataloader())
        waits, steps = [], []
        for _ in range(args.batches):
            tick = time.perf_counter()
            batch = next(loader)
            tock = time.perf_counter()
            loss = module._loss(batch)  # training_step without Lightning's logging
            loss.backward()
            optimiser.step()
            optimiser.zero_grad()
            waits.append(tock - tick)
            steps.append(time.perf_counter() - tock)
    wait, step = statistics.median(waits), statistics.median(steps)
    images = sum(len(items) for items in data.items.values())
    print(f"{' '.join(args.overrides)}")
    print(f"  setup: {setup_seconds:.1f} s for {images} images (decoded and resized once)")
    share = wait / (wait + step)
    print(f"  per batch: data {wait * 1000:.1f} ms, step {step * 1000:.0f} ms; waiting for data {share:.1%}")


if __name__ == "__main__":
    main()
