"""Is the ``pretrained`` frontend's EfficientNet-Lite0 really ImageNet-trained, and fed as it was trained?

Runs the whole classifier (the frontend's own normalisation and feature grid, average-pooled,
then the ImageNet layer from the same weights file) on Flickr8k images whose captions mention
a dog and on images whose captions mention no dog, and reports the share whose top-1 (and
top-5) ImageNet classes include a dog breed (class indices 151-268, 118 of the 1000), the mean
probability mass on the dog breeds, and how many distinct top-1 classes a group gets. An
ImageNet network should find the dogs and leave the rest; a randomly initialised one gives
(nearly) every image the same class, so its shares are 0% or 100% for both groups alike. The images are
128 px on the shorter side: each is resized
(bicubic) so its shorter side is the size measured, then centre-cropped square.

Besides the frontend's normalisation ((255 x - 127) / 128, TensorFlow's for the Lite models)
it measures torchvision's ImageNet mean/std (what the package's README shows), the channels
in BGR order, and randomly initialised weights, so a wrong choice would show.
``--time`` also times the frozen frontend (no_grad) on batches of 32 and counts its parameters.

    python benchmarks/check_pretrained.py [--data ../shared/data/flickr8k] [--per-group 250] [--threads 2] [--time]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import re
import statistics
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image

import zoo_plugins.frontends.pretrained as pretrained  # registers frontend=pretrained
from zoo.contracts import SourceDescription
from zoo.registry import build, default_config

DOG_CLASSES = range(151, 269)  # ImageNet-1k class indices 151..268: the dog breeds
DOG_WORDS = re.compile(r"\b(dog|dogs|puppy|puppies)\b", re.IGNORECASE)
IMAGENET_MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
IMAGENET_STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)


def pick_images(data: Path, per_group: int, seed: int) -> tuple[list[Path], list[Path]]:
    """``per_group`` images whose captions say "dog" and as many whose captions never mention a dog or puppy."""
    images = json.loads((data / "dataset_flickr8k.json").read_text())["images"]
    dog, other = [], []
    for image in images:
        raws = [s["raw"] for s in image["sentences"]]
        if any(re.search(r"\bdog\b", raw, re.IGNORECASE) for raw in raws):
            dog.append(data / "images" / image["filename"])
        elif not any(DOG_WORDS.search(raw) for raw in raws):
            other.append(data / "images" / image["filename"])
    print(f"Flickr8k: {len(dog)} images with 'dog' in a caption, {len(other)} with no dog/puppy in any caption")
    rng = random.Random(seed)
    return rng.sample(dog, min(per_group, len(dog))), rng.sample(other, min(per_group, len(other)))


def load_pixels(path: Path, size: int) -> torch.Tensor:
    """(3, size, size) float in [0, 1]: shorter side resized to ``size`` (bicubic), centre crop."""
    image = Image.open(path).convert("RGB")
    w, h = image.size
    scale = size / min(w, h)
    image = image.resize((max(size, round(w * scale)), max(size, round(h * scale))), Image.BICUBIC)
    w, h = image.size
    left, top = (w - size) // 2, (h - size) // 2
    image = image.crop((left, top, left + size, top + size))
    return torch.from_numpy(np.asarray(image, dtype=np.float32) / 255.0).permute(2, 0, 1)


def frontend_logits(frontend, fc: torch.nn.Linear, pixels: torch.Tensor) -> torch.Tensor:
    """The frontend's own path: normalise, feature grid (B, S, 1280), average over S, ImageNet layer."""
    return fc(frontend.extract(pixels).mean(dim=1))


def variants(frontend, classifier, random_net):
    """name -> pixels (B, 3, H, W) in [0, 1] -> ImageNet logits (B, 1000)."""
    tf = lambda x: (x - pretrained.PIXEL_MEAN) / pretrained.PIXEL_STD  # noqa: E731
    return {
        "frontend ((255x-127)/128, RGB)": lambda x: frontend_logits(frontend, classifier._fc, x),
        "ImageNet mean/std, RGB": lambda x: classifier((x - IMAGENET_MEAN) / IMAGENET_STD),
        "(255x-127)/128, BGR": lambda x: classifier(tf(x.flip(1))),
        "random weights": lambda x: random_net(tf(x)),
    }


def dog_share(logits: torch.Tensor) -> str:
    """Shares whose top-1 class, or any of the top 5, is a dog breed; mean probability on the breeds;
    distinct top-1s."""
    top5 = logits.topk(5, dim=1).indices
    is_dog = (top5 >= DOG_CLASSES.start) & (top5 < DOG_CLASSES.stop)
    mass = logits.softmax(dim=1)[:, DOG_CLASSES.start : DOG_CLASSES.stop].sum(dim=1).mean().item()
    distinct = len(set(top5[:, 0].tolist()))
    top1, top5_share = is_dog[:, 0].float().mean().item(), is_dog.any(dim=1).float().mean().item()
    return f"{top1:6.1%} {top5_share:6.1%} {mass:6.1%} {distinct:4d}"


def run_check(args: argparse.Namespace) -> None:
    dog, other = pick_images(Path(args.data), args.per_group, args.seed)
    frontend = build(
        "frontend",
        default_config("frontend", "pretrained", dim=8),
        source=SourceDescription("image", channels=3, height=224, width=224),
    ).eval()
    classifier = pretrained.load_efficientnet_lite0(classifier=True)
    network = pretrained._import(*pretrained.NETWORK_PACKAGE)
    torch.manual_seed(args.seed)
    random_net = network.EfficientNet.from_name(pretrained.MODEL_NAME, image_size=None).eval()
    models = variants(frontend, classifier, random_net)
    print(
        f"{len(dog)} dog images, {len(other)} other images. "
        "Columns per group: share whose top-1 class is a dog breed,\n"
        "share with a dog breed among the top 5, mean probability on the dog breeds, distinct top-1 classes"
    )
    for size in (128, 224):
        batches = {
            name: torch.stack([load_pixels(p, size) for p in paths]) for name, paths in (("dog", dog), ("other", other))
        }
        with torch.no_grad():
            same = (
                (
                    frontend_logits(frontend, classifier._fc, batches["dog"][:8])
                    - classifier((batches["dog"][:8] - pretrained.PIXEL_MEAN) / pretrained.PIXEL_STD)
                )
                .abs()
                .max()
                .item()
            )
            print(
                f"\n{size} px (grid {frontend.grid[0]}x{frontend.grid[1]}); frontend path vs the package's own "
                f"forward: max |logit difference| {same:.2e}"
            )
            print(f"  {'':32}  {'dog images':^26}  {'other images':^26}")
            print(f"  {'':32}  {' top-1  top-5 P(dog)    n':>26}  {' top-1  top-5 P(dog)    n':>26}")
            for name, model in models.items():
                cells = []
                for group in ("dog", "other"):
                    logits = torch.cat([model(chunk) for chunk in batches[group].split(args.batch)])
                    cells.append(dog_share(logits))
                print(f"  {name:32}  {cells[0]:>26}  {cells[1]:>26}")


def run_timing(args: argparse.Namespace) -> None:
    frontend = build(
        "frontend",
        default_config("frontend", "pretrained", dim=512),
        source=SourceDescription("image", channels=3, height=224, width=224),
    ).eval()
    trainable = sum(p.numel() for p in frontend.parameters() if p.requires_grad)
    frozen = sum(p.numel() for p in frontend.parameters() if not p.requires_grad)
    buffers = sum(b.numel() for name, b in frontend.named_buffers() if "running" in name)
    print(f"\nparameters (dim=512): frozen {frozen:,} (+ {buffers:,} BatchNorm statistics), trainable {trainable:,}")
    tuned = build(
        "frontend",
        default_config("frontend", "pretrained", dim=512, finetune_blocks=1),
        source=SourceDescription("image", channels=3, height=224, width=224),
    )
    print(f"  finetune_blocks=1: trainable {sum(p.numel() for p in tuned.parameters() if p.requires_grad):,}")
    print(
        f"forward of a batch of 32, frozen, no_grad, {torch.get_num_threads()} threads, "
        f"{platform.processor() or platform.machine()}:"
    )
    images = {size: torch.rand(32, 3, size, size) for size in (224, 128)}
    times: dict[int, list[float]] = {size: [] for size in images}
    with torch.no_grad():
        for batch in images.values():
            frontend(batch)  # warm-up
        for _ in range(args.rounds):  # the sizes take turns, so both see the same machine load
            for size, batch in images.items():
                started = time.perf_counter()
                frontend(batch)
                times[size].append(time.perf_counter() - started)
    for size, measured in times.items():
        best, median = min(measured), statistics.median(measured)
        print(
            f"  {size} px: best {best * 1000:.0f} ms ({best / 32 * 1000:.1f} ms/image), "
            f"median {median * 1000:.0f} ms of {args.rounds} (a shared machine's load shows in the median)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", default="../shared/data/flickr8k", help="folder with dataset_flickr8k.json and images/"
    )
    parser.add_argument("--per-group", type=int, default=250, help="images drawn from each group")
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--time", action="store_true", help="also time the frozen frontend and count its parameters")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--skip-check", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if not args.skip_check:
        run_check(args)
    if args.time:
        run_timing(args)


if __name__ == "__main__":
    main()
