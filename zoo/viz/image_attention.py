"""Where a captioner looked: each generated word's attention over the image grid, drawn on the image.

Show, Attend and Tell (Xu et al., 2015) made these pictures the way to read a
captioning model: for every word, the cross-attention weights over the grid
cells are stretched to the image's size and laid over it. The caption is decoded
once (:func:`~zoo.viz.attention_maps.sentence_attention`); a multi-layer,
multi-head decoder's weights are averaged over the heads of its last layer, the
layer that chose the word.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from matplotlib.figure import Figure

from zoo.config.sections import DecodeConfig
from zoo.contracts import Task
from zoo.data.images import as_image, read_rgb
from zoo.viz.attention_maps import AttentionMapError, log_pictures, save_figure, sentence_attention

COLUMNS = 5  # words per row in the overview picture


def word_maps(
    model: Any, task: Task, image: Any, decode_cfg: DecodeConfig | None = None
) -> tuple[list[str], torch.Tensor]:
    """The caption's words (end of sentence included) and their (words, rows, columns) attention over the grid."""
    attention = sentence_attention(model, task, image, decode_cfg)
    cross = attention.maps.get("cross")
    grid = getattr(model.frontend, "grid", None)
    if not cross or grid is None:
        return attention.labels["target_out"], torch.empty(0)
    weights = cross[-1].mean(dim=0)  # (T, S): the last layer, heads averaged
    rows, columns = grid
    if weights.shape[-1] != rows * columns:
        raise AttentionMapError(f"attention over {weights.shape[-1]} positions does not fit the {rows}x{columns} grid")
    return attention.labels["target_out"], weights.reshape(-1, rows, columns)


def overlay(pixels: np.ndarray, weights: torch.Tensor) -> np.ndarray:
    """(H, W) attention stretched (bilinear) over an image and rescaled to 0..1 (least to most attended cell),
    so that a spread-out attention still shows where it leans."""
    height, width = pixels.shape[:2]
    upsampled = F.interpolate(weights[None, None].float(), size=(height, width), mode="bilinear", align_corners=False)[
        0, 0
    ]
    low, high = upsampled.min(), upsampled.max()
    return ((upsampled - low) / (high - low).clamp(min=1e-9)).numpy()


def write_image_attention(
    model: Any,
    task: Task,
    image: Any,
    out_dir: str | Path,
    *,
    decode_cfg: DecodeConfig | None = None,
    wandb_run: Any = None,
) -> list[Path]:
    """Caption ``image`` (a file path or ImageSource) and write, into ``out_dir``, ``word<k>_<word>.png``
    for each generated word and ``caption.png`` with all of them. A model that does not attend
    (``attention=none``) writes nothing and returns ``[]``.
    """
    words, maps = word_maps(model, task, image, decode_cfg)
    if maps.numel() == 0:
        return []
    source = task.encode_sources([image])[0]
    pixels = source.permute(1, 2, 0).numpy() if source.dim() == 3 else np.asarray(read_rgb(as_image(image)))
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for k, (word, weights) in enumerate(zip(words, maps), start=1):
        fig = Figure(figsize=(3, 3.3))
        _draw(fig.add_subplot(), pixels, weights, word)
        written.append(save_figure(fig, out_dir / f"word{k:02d}_{_slug(word)}.png"))
    columns = min(COLUMNS, len(words))
    rows = math.ceil(len(words) / columns)
    fig = Figure(figsize=(2.4 * columns, 2.6 * rows + 0.4))
    for ax, (word, weights) in zip(fig.subplots(rows, columns, squeeze=False).flat, zip(words, maps)):
        _draw(ax, pixels, weights, word)
    for ax in fig.axes[len(words) :]:
        ax.set_axis_off()
    fig.suptitle(" ".join(words[:-1]), y=1.0)
    written.append(save_figure(fig, out_dir / "caption.png"))
    log_pictures(wandb_run, written, image)
    return written


def _draw(ax: Any, pixels: np.ndarray, weights: torch.Tensor, word: str) -> None:
    """The image lit where the word attends and dimmed elsewhere, keeping its colours (Xu et al.'s pictures)."""
    light = 0.15 + 0.85 * overlay(pixels, weights)[..., None]
    ax.imshow((pixels.astype(np.float32) * light).astype(np.uint8))
    ax.set_title(word, fontsize=11)
    ax.set_axis_off()


def _slug(word: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in word)[:20] or "word"
