"""Where a captioner looked: each generated word's attention over the image grid, drawn on the image.

Show, Attend and Tell (Xu et al., 2015) made these pictures the way to read a
captioning model: for every word, the cross-attention weights over the grid
cells are stretched (bilinearly) to the image's size and laid over it. The
caption is decoded once (:func:`~zoo.viz.attention_maps.sentence_attention`); a
multi-layer, multi-head decoder's weights are averaged over the heads of its last
layer, the layer that chose the word.

Every word of a caption is coloured on one absolute scale, from 0 to the highest
weight any of its words gives any cell, and a colour bar shows that scale. A word
that spreads its attention evenly then looks evenly dim and one that fixes on a
cell looks bright there; rescaling each word from its least to its most attended
cell, as is often done, makes the two look alike. The top is the caption's highest
weight rather than 1 because a softmax over dozens of cells seldom comes near 1:
on a 0..1 scale every word of a trained model would look dark.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from matplotlib import colormaps
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

from zoo.config.sections import DecodeConfig
from zoo.contracts import Task
from zoo.viz.attention_maps import AttentionMapError, log_pictures, save_figure, sentence_attention

COLUMNS = 5  # words per row in the overview picture
#: Low weights dark, high bright: where the colour is bright, the word looked.
COLOUR_MAP = "inferno"
#: How much of each pixel is the weight's colour; the rest is the image, which stays legible beneath.
OPACITY = 0.6


def word_maps(
    model: Any, task: Task, image: Any, decode_cfg: DecodeConfig | None = None
) -> tuple[list[str], torch.Tensor, np.ndarray | None]:
    """The caption's words (end of sentence included), their (words, rows, columns) attention over the grid
    (empty when the model does not attend) and the (H, W, 3) image the model read."""
    attention = sentence_attention(model, task, image, decode_cfg)
    cross, grid = attention.maps.get("cross"), attention.image
    if not cross or grid is None:
        return attention.labels["target_out"], torch.empty(0), None
    weights = cross[-1].mean(dim=0)  # (T, S): the last layer, heads averaged
    if weights.shape[-1] != grid.rows * grid.columns:
        raise AttentionMapError(
            f"attention over {weights.shape[-1]} positions does not fit the {grid.rows}x{grid.columns} grid"
        )
    return attention.labels["target_out"], weights.reshape(-1, grid.rows, grid.columns), grid.pixels


def scaled(weights: torch.Tensor, size: tuple[int, int], top: float) -> np.ndarray:
    """(rows, columns) weights stretched (bilinear) to ``size`` = (H, W) and divided by ``top``: 0..1 on the
    caption's scale, so a weight keeps its size relative to every other word's."""
    upsampled = F.interpolate(weights[None, None].float(), size=size, mode="bilinear", align_corners=False)[0, 0]
    return (upsampled / max(top, 1e-9)).clamp(0.0, 1.0).numpy()


def overlay(pixels: np.ndarray, weights: torch.Tensor, top: float) -> np.ndarray:
    """The (H, W, 3) uint8 image with one word's weights laid over it in :data:`COLOUR_MAP` colours, 0..``top``."""
    colours = colormaps[COLOUR_MAP](scaled(weights, pixels.shape[:2], top))[..., :3]
    mixed = (1.0 - OPACITY) * pixels.astype(np.float32) / 255.0 + OPACITY * colours
    return np.round(mixed * 255.0).astype(np.uint8)


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
    for each generated word and ``caption.png`` with all of them, every one on the caption's colour scale
    with its colour bar. A model that does not attend (``attention=none``) writes nothing and returns ``[]``.
    """
    words, maps, pixels = word_maps(model, task, image, decode_cfg)
    if maps.numel() == 0:
        return []
    if pixels is None:
        raise AttentionMapError(
            f"cannot read the image {image} again to draw on it; give the path of the image file itself"
        )
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    top = float(maps.max())
    written = [
        save_figure(word_figure(pixels, weights, word, top), out_dir / f"word{k:02d}_{_slug(word)}.png")
        for k, (word, weights) in enumerate(zip(words, maps), start=1)
    ]
    written.append(save_figure(caption_figure(pixels, words, maps), out_dir / "caption.png"))
    log_pictures(wandb_run, written, image)
    return written


def word_figure(pixels: np.ndarray, weights: torch.Tensor, word: str, top: float) -> Figure:
    """One word's attention on the image, coloured 0..``top`` (the caption's highest weight), with the colour bar."""
    fig = Figure(figsize=(3.6, 3.3), layout="constrained")
    ax = fig.add_subplot()
    _draw(ax, pixels, weights, word, top)
    _colour_bar(fig, [ax], top)
    return fig


def caption_figure(pixels: np.ndarray, words: list[str], maps: torch.Tensor) -> Figure:
    """Every word's attention, :data:`COLUMNS` a row, on one scale (0 to the caption's highest weight) and
    one colour bar; titled with the caption."""
    top = float(maps.max())
    columns = min(COLUMNS, len(words))
    rows = math.ceil(len(words) / columns)
    fig = Figure(figsize=(2.4 * columns + 0.9, 2.6 * rows + 0.4), layout="constrained")
    axes = fig.subplots(rows, columns, squeeze=False)
    for ax, (word, weights) in zip(axes.flat, zip(words, maps)):
        _draw(ax, pixels, weights, word, top)
    for ax in axes.flat[len(words) :]:
        ax.set_axis_off()
    _colour_bar(fig, list(axes.flat), top)
    fig.suptitle(" ".join(words[:-1]))
    return fig


def _draw(ax: Any, pixels: np.ndarray, weights: torch.Tensor, word: str, top: float) -> None:
    ax.imshow(overlay(pixels, weights, top))
    ax.set_title(word, fontsize=11)
    ax.set_axis_off()


def _colour_bar(fig: Figure, axes: list[Any], top: float) -> None:
    """The caption's scale beside ``axes``: 0 to its highest weight."""
    scale = ScalarMappable(Normalize(0.0, top), colormaps[COLOUR_MAP])
    bar = fig.colorbar(scale, ax=axes, shrink=0.85, aspect=25)
    bar.set_label(f"attention weight, 0 to the caption's highest ({top:.3g})", fontsize=8)
    bar.ax.tick_params(labelsize=7)


def _slug(word: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in word)[:20] or "word"
