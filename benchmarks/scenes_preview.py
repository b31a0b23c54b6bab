"""A PNG grid of 16 ``scenes`` images with their canonical captions, to check the data by eye.

    python benchmarks/scenes_preview.py scenes.png [--seed 0 --split train --start 0 --image-size 64]

Also prints how long rendering the default-sized dataset (2000/200/200 images) takes.
"""

from __future__ import annotations

import argparse
import textwrap
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from zoo import registry  # noqa: E402
from zoo.registry import discovery  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("path", help="where to write the PNG")
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--split", default="train", choices=("train", "val", "test"))
parser.add_argument("--start", type=int, default=0, help="index of the first scene shown")
parser.add_argument("--image-size", type=int, default=64)
args = parser.parse_args()

discovery.discover()
config = registry.default_config("dataset", "scenes", seed=args.seed, image_size=args.image_size)
dataset = registry.build("dataset", config)

started = time.perf_counter()
data = dataset.splits()
seconds = time.perf_counter() - started
print(f"rendered {sum(map(len, data.values()))} images of {args.image_size} px in {seconds:.2f} s")

items = [dataset.item(args.split, index) for index in range(args.start, args.start + 16)]
figure, axes = plt.subplots(4, 4, figsize=(12, 13))
for axis, item in zip(axes.flat, items):
    axis.imshow(item.source.pixels, interpolation="nearest")
    axis.set_title("\n".join(textwrap.wrap(f"{item.id}: {item.references[0]}", 34)), fontsize=8.5)
    axis.set_xticks([])
    axis.set_yticks([])
figure.tight_layout()
figure.savefig(args.path, dpi=90)
print(f"wrote {args.path}")
