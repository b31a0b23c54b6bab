"""Peak resident memory of a features run's data path at 1,000 and 8,000 images: it must not grow with the images.

Synthetic Flickr8k-sized data: N images in a Karpathy split file (75% train, 12.5%
val, 12.5% test, five ten-word captions each; every image a tiny PNG, which
``dataset=karpathy`` opens to check) and their features at the ``pretrained``
frontend's grid, 7 x 7 x 1280 (EfficientNet-Lite0 at 224 px), in float16, written
with ``zoo.data.features.write_features`` (1 GB at 8,000 images). Each
measurement is a fresh process that sets up the real ``ZooDataModule`` of
``task=captioning dataset=karpathy frontend=features`` (reads the splits, trains
the tokenizer, encodes the captions, opens the features) and then draws every
batch of every split, as an epoch and its evaluation do. Reported (Linux): the
resident set before setting up (torch, Lightning and zoo imported), its peak while
setting up, the resident set after it, its peak while drawing the batches (VmHWM, the
figure ``ru_maxrss`` reports, restarted through /proc/self/clear_refs after setting
up) and how far that rises above the set after setting up: the memory the batches
take, which must not grow with the images. With ``data.num_workers`` > 0, also the
largest peak among the workers (``RUSAGE_CHILDREN``; a forked worker starts with
its parent's pages).

The "kept" rows turn off the release of the mapped pages after each batch
(``FeatureTable.rows``): the resident set then counts every page of the file that
was read, though the kernel may drop them at will, and grows with the images even
though nothing is loaded whole.

    python benchmarks/features_memory.py                      # 1,000 and 8,000 images, 0 and 2 workers
    python benchmarks/features_memory.py --images 500 2000 --workers 0 --repeats 1
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

GRID, FEATURE_DIM = (7, 7), 1280  # plugins/frontends/pretrained.py at its 224 px
CAPTIONS = 5
WORDS = "a the dog cat man woman child ball grass water red blue runs jumps sits on in with near big small".split()
BLOCK = 256  # images of features generated at a time


def make_data(folder: Path, images: int) -> list[str]:
    """A Karpathy split file, its image files and a features file for ``images`` images; the overrides to use."""
    import torch

    from zoo.data.features import write_features

    features = folder / "features.npy"
    if not features.exists():  # made once, measured several times
        (folder / "images").mkdir(parents=True)
        png, rng, entries = _tiny_png(), random.Random(0), []
        for i in range(images):
            name = f"{i:05d}.png"
            (folder / "images" / name).write_bytes(png)
            split = "train" if i < images * 3 // 4 else "val" if i < images * 7 // 8 else "test"
            sentences = [{"tokens": rng.choices(WORDS, k=10)} for _ in range(CAPTIONS)]
            entries.append({"filename": name, "split": split, "sentences": sentences})
        (folder / "split.json").write_text(json.dumps({"dataset": "synthetic", "images": entries}))
        generator = np.random.default_rng(0)
        shape = (GRID[0] * GRID[1], FEATURE_DIM)
        blocks = (
            torch.from_numpy(generator.random((min(BLOCK, images - start), *shape), np.float32))
            for start in range(0, images, BLOCK)
        )
        write_features(features, [e["filename"] for e in entries], blocks, GRID, made_by={"benchmark": "random"})
    return [
        "task=captioning",
        "dataset=karpathy",
        f"dataset.split_file={folder / 'split.json'}",
        f"dataset.images={folder / 'images'}",
        "frontend=features",
        f"task.features={features}",
    ]


def _tiny_png() -> bytes:
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (8, 8)).save(buffer, format="PNG")
    return buffer.getvalue()


def measure(overrides: list[str], keep_pages: bool) -> dict:
    """In this (fresh) process: set the data module up, draw every batch of every split; memory in MB."""
    from hydra import compose, initialize_config_module

    import zoo.config.schema  # noqa: F401  (stores the schema)
    import zoo.data.features
    from zoo.data.datamodule import ZooDataModule
    from zoo.registry.discovery import discover

    if keep_pages:
        zoo.data.features.RELEASE = None
    discover()
    with initialize_config_module("zoo.conf", version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    before = _status_mb("VmRSS")
    _restart_peak()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as run_dir:
        data = ZooDataModule(cfg, run_dir)
        data.setup()
        setup_peak, after_setup = _status_mb("VmHWM"), _status_mb("VmRSS")
        _restart_peak()
        batches = rows = 0
        for make_loader in (data.train_dataloader, data.val_dataloader, data.test_dataloader):
            loader = make_loader()
            for batch in loader:
                batches += 1
                rows += len(batch["source"])
            del loader, batch  # persistent workers end with their loader, so their peaks are counted below
        batches_peak = _status_mb("VmHWM")
        del data
        gc.collect()
    return {
        "before_mb": before,
        "setup_peak_mb": setup_peak,
        "after_setup_mb": after_setup,
        "batches_peak_mb": batches_peak,
        "workers_peak_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,  # kB on Linux
        "batches": batches,
        "rows": rows,
        "seconds": time.perf_counter() - started,
    }


def _restart_peak() -> None:
    """Restart this process's peak resident set (VmHWM, what ru_maxrss reports) from its resident set now."""
    Path("/proc/self/clear_refs").write_text("5")


def _status_mb(field: str) -> float:
    """A memory figure of this process from /proc/self/status (Linux), in MB."""
    line = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith(field + ":"))
    return int(line.split()[1]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, nargs="+", default=[1000, 8000])
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 2], help="data.num_workers values to measure")
    parser.add_argument("--repeats", type=int, default=3, help="processes per configuration (medians are shown)")
    parser.add_argument("--work", type=Path, help="folder for the synthetic data (default: a temporary one)")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # JSON: one measurement in this process
    args = parser.parse_args()
    if args.child:
        child = json.loads(args.child)
        print(json.dumps(measure(child["overrides"], child["keep_pages"])))
        return
    with tempfile.TemporaryDirectory() as temporary:
        work = args.work or Path(temporary)
        configurations = [(n, workers, False) for n in args.images for workers in args.workers]
        configurations += [(n, 0, True) for n in args.images]
        print(
            "| images | features file | data.num_workers | mapped pages | before | setting up | after setup "
            "| drawing batches | rise while drawing (min-max) | workers |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|")
        for images, workers, keep_pages in configurations:
            overrides = make_data(work / f"n{images}", images) + [f"data.num_workers={workers}"]
            size = (work / f"n{images}" / "features.npy").stat().st_size / 2**20
            runs = [_measure_in_child(overrides, keep_pages) for _ in range(args.repeats)]
            median = {what: statistics.median(run[what] for run in runs) for what in runs[0]}
            rises = [run["rise_mb"] for run in runs]
            memory = [f"{median[what]:,.0f} MB" for what in ("before_mb", "setup_peak_mb", "after_setup_mb")]
            memory.append(f"{median['batches_peak_mb']:,.0f} MB")
            memory.append(f"{median['rise_mb']:,.0f} MB ({min(rises):,.0f}-{max(rises):,.0f})")
            memory.append(f"{median['workers_peak_mb']:,.0f} MB" if workers else "-")
            pages = "kept" if keep_pages else "released"
            print(f"| {images:,} | {size:,.0f} MB | {workers} | {pages} | {' | '.join(memory)} |", flush=True)
            print(
                f"  ({median['batches']:,.0f} batches, {median['rows']:,.0f} rows, {median['seconds']:.1f} s)",
                file=sys.stderr,
                flush=True,
            )


def _measure_in_child(overrides: list[str], keep_pages: bool) -> dict:
    child = json.dumps({"overrides": overrides, "keep_pages": keep_pages})
    out = subprocess.run([sys.executable, __file__, "--child", child], check=True, capture_output=True, text=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return {**result, "rise_mb": result["batches_peak_mb"] - result["after_setup_mb"]}


if __name__ == "__main__":
    main()
