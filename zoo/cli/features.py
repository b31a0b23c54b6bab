"""``zoo features OUT [OVERRIDES...]``: run an image backbone over a dataset once and save the grids.

The overrides are those of ``zoo train`` (``task=captioning`` is implied): the
dataset says which images, the task how they are resized, the frontend which
backbone. Training then reads the file with ``frontend=features task.features=OUT``
and spends no time in the backbone. An existing OUT is never overwritten.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import torch

from zoo.cli.args import CommandParser
from zoo.errors import ZooError

CHUNK = 256  # images decoded at a time
BATCH = 32  # images per backbone pass


class FeatureCommandError(ZooError, ValueError):
    """The command cannot extract features as asked."""


def run(args: list[str], description: str) -> None:
    parser = CommandParser(prog="zoo features", description=description)
    parser.add_argument("out", help="the .pt file to write (must not exist yet)")
    parser.add_argument(
        "overrides", nargs="*", help="config overrides as for zoo train, e.g. frontend=pretrained dataset=karpathy"
    )
    opts = parser.parse_args(args)
    out = Path(opts.out)
    if out.exists():
        raise FeatureCommandError(f"{out} already exists; choose another file name or delete it first")
    if out.suffix != ".pt":
        raise FeatureCommandError(f"{out}: features are written as a .pt file; end the name with .pt")
    cfg = _compose(opts.overrides)
    started = time.perf_counter()
    table = extract(cfg)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    table.save(partial)
    os.replace(partial, out)
    rows, columns = table.grid
    print(
        f"wrote features of {len(table.features)} images ({rows}x{columns} grid, {table.feature_dim} each) "
        f"to {out} in {time.perf_counter() - started:.0f} s; train with: frontend=features task.features={out}"
    )


def _compose(overrides: list[str]):
    """The config of ``zoo train`` with these overrides (``task=captioning`` unless another task is named), checked."""
    import zoo.config.schema  # noqa: F401  (stores the schema)
    from zoo.config.renamed import check_renamed
    from zoo.config.validate import validate
    from zoo.registry.discovery import discover
    from zoo.training.entry import compose_config, plugin_dirs_from_overrides

    check_renamed(overrides)
    discover(plugin_dirs_from_overrides(overrides))
    if not any(o.startswith("task=") for o in overrides):
        overrides = ["task=captioning", *overrides]
    cfg = compose_config(overrides)
    validate(cfg)
    return cfg


@torch.no_grad()
def extract(cfg):
    """The backbone grid of every image of every split, keyed by the image's key."""
    from zoo.data.datamodule import build_task
    from zoo.data.features import FeatureTable
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
    features: dict[str, torch.Tensor] = {}
    for start in range(0, len(images), CHUNK):
        chunk = images[start : start + CHUNK]
        pixels = task.collate_sources(task.encode_sources(chunk))
        for offset in range(0, len(chunk), BATCH):
            grids = frontend.extract(pixels[offset : offset + BATCH]).to(torch.float16)
            for image, grid in zip(chunk[offset : offset + BATCH], grids):
                features[image.key] = grid.clone()
        print(f"  {len(features)}/{len(images)} images", file=sys.stderr, flush=True)
    return FeatureTable(features, tuple(frontend.grid))
