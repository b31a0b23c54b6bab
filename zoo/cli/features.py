"""``zoo features OUT.npy [--dtype float16|float32] [OVERRIDES...]``: run an image backbone over a dataset once.

The overrides are those of ``zoo train`` (``task=captioning`` is implied): the
dataset says which images, the task how they are resized, the frontend which
backbone. The grids go, a batch at a time, into a memory-mapped ``OUT.npy`` with
its index ``OUT.index.json`` (:mod:`zoo.data.features`), both complete or not
there at all. Training then reads them with ``frontend=features
task.features=OUT.npy`` and spends no time in the backbone. An existing OUT is
never overwritten.
"""

from __future__ import annotations

import itertools
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import torch

from zoo.cli.args import CommandParser, train_config
from zoo.data.features import DEFAULT_DTYPE, DTYPES, FeatureTable, check_new, write_features
from zoo.errors import ZooError
from zoo.run.claim import refuse_live_run

CHUNK = 256  # images decoded at a time
BATCH = 32  # images per backbone pass


class FeatureCommandError(ZooError, ValueError):
    """The command cannot extract features as asked."""


def run(args: list[str], description: str) -> None:
    parser = CommandParser(prog="zoo features", description=description)
    parser.add_argument("out", help="the NAME.npy file to write, with NAME.index.json beside it (neither may exist)")
    parser.add_argument(
        "--dtype",
        choices=DTYPES,
        default=DEFAULT_DTYPE,
        help=f"element type of the saved grids (default {DEFAULT_DTYPE}: half the disk and memory of float32)",
    )
    parser.add_argument(
        "overrides", nargs="*", help="config overrides as for zoo train, e.g. frontend=pretrained dataset=karpathy"
    )
    opts = parser.parse_intermixed_args(args)  # --dtype before, between or after the overrides
    out = Path(opts.out)
    check_new(out)  # before the backbone runs for minutes
    refuse_live_run(out, "write the features outside it")
    cfg = _compose(opts.overrides)
    started = time.perf_counter()
    table = extract(cfg, out, opts.dtype)
    rows, columns = table.grid
    print(
        f"wrote features of {len(table)} images ({rows}x{columns} grid, {table.feature_dim} {table.dtype} each) "
        f"to {out} in {time.perf_counter() - started:.0f} s; train with: frontend=features task.features={out}"
    )


def _compose(overrides: list[str]):
    """The config of ``zoo train`` with these overrides (``task=captioning`` unless another task is named), checked."""
    if not any(o.startswith("task=") for o in overrides):
        overrides = ["task=captioning", *overrides]
    return train_config(overrides)


@torch.no_grad()
def extract(cfg, out: Path, dtype: str = DEFAULT_DTYPE) -> FeatureTable:
    """Write the backbone grid of every image of every split to ``out``, row by row, keyed by the image's key."""
    from omegaconf import OmegaConf

    from zoo.data.datamodule import build_task
    from zoo.registry import build, get

    if not get("frontend", cfg.frontend.name).cls.feature_dim:
        raise FeatureCommandError(
            f"frontend '{cfg.frontend.name}' has no backbone to extract features with; use frontend=pretrained"
        )
    task = build_task(cfg)
    if task.reads_features:
        raise FeatureCommandError(
            f"task {cfg.task.name} already reads precomputed features here (task.features); zoo features runs "
            "a backbone over the sources themselves: drop task.features and choose frontend=pretrained"
        )
    images = list(
        {
            item.source.key: item.source for items in build("dataset", cfg.dataset).splits().values() for item in items
        }.values()
    )
    description = task.source_description()
    frontend = build("frontend", {**cfg.frontend, "dim": cfg.frontend.dim or 1}, source=description).eval()
    grids = _grids(task, frontend, images)
    first = next(grids)  # the backbone's grid is known once it has run
    made_by = {
        "frontend": OmegaConf.to_container(cfg.frontend, resolve=True),
        "image_size": task.image_size,
        "fit": str(task.cfg.fit),
        "dataset": OmegaConf.to_container(cfg.dataset, resolve=True),
    }
    keys = [image.key for image in images]
    return write_features(out, keys, itertools.chain([first], grids), frontend.grid, dtype, made_by)


def _grids(task: Any, frontend: Any, images: Sequence[Any]) -> Iterator[torch.Tensor]:
    """(B, positions, feature_dim) backbone grids of ``images`` in order, a batch at a time."""
    for start in range(0, len(images), CHUNK):
        chunk = images[start : start + CHUNK]
        pixels = task.collate_sources(task.encode_sources(chunk))
        for offset in range(0, len(chunk), BATCH):
            yield frontend.extract(pixels[offset : offset + BATCH])
        print(f"  {min(start + CHUNK, len(images))}/{len(images)} images", file=sys.stderr, flush=True)
