"""Attention pictures: translate one sentence, then draw where the model looked.

The sentence is decoded (greedy by default), and the model is run once more with
teacher forcing on ``(source, BOS + hypothesis)`` asking for its attention
weights. Those are gathered into one model-independent form,

    {"encoder_self": [per layer (B, H, S, S)],
     "decoder_self": [per layer (B, H, T, T)],
     "cross":        [per layer (B, H, T, S)]}

(:func:`attention_weights`; kinds a model lacks are left out), and every layer and
head of every kind becomes a PNG heatmap labelled with the tokens. When a layer has
several heads, a grid with all of them side by side is drawn too, in the spirit of
the head view of bertviz (Vig, 2019).

Only :func:`attention_weights` knows how models hand out their weights:

* the encoder's and decoder's ``return_attention`` attribute, when they have one, is
  switched on for the pass (the ``transformer`` encoder then returns
  ``EncoderOutput.attention`` = per-layer (B, H, S, S) self-attention; the
  ``transformer`` decoder returns ``{"self": [...], "cross": [...]}``);
* ``DecoderOutput.attention`` values may be one (B, H, T, S) tensor (the ``rnn``
  decoder's ``{"cross": (B, 1, T, S)}``) or a per-layer list;
  the decoder's ``self`` key is called ``decoder_self`` here.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from matplotlib.figure import Figure

from zoo.config.sections import DecodeConfig
from zoo.contracts import BOS, EOS, SPECIAL_TOKENS, Task
from zoo.data.text import token_labels
from zoo.decoding import generate
from zoo.errors import ZooError
from zoo.viz.grid import ImageGrid, image_grid

#: Attention kinds, in the order pictures are written.
KINDS = ("encoder_self", "decoder_self", "cross")
#: What the rows (queries) and columns (keys) of each kind are labelled with.
AXES = {
    "encoder_self": ("source", "source"),
    "decoder_self": ("target_in", "target_in"),
    "cross": ("target_out", "source"),
}
GRID_COLUMNS = 4  # heads per row in a layer's grid


class AttentionMapError(ZooError, ValueError):
    """A sentence that cannot be drawn (e.g. it has no tokens)."""


# --------------------------------------------------------------------------- collecting weights
@contextlib.contextmanager
def _returning_attention(model: Any) -> Iterator[None]:
    """Switch on ``return_attention`` on the model's encoder and decoder where they have it."""
    parts = [
        m for m in (getattr(model, "encoder", None), getattr(model, "decoder", None)) if hasattr(m, "return_attention")
    ]
    before = [m.return_attention for m in parts]
    try:
        for m in parts:
            m.return_attention = True
        yield
    finally:
        for m, value in zip(parts, before):
            m.return_attention = value


def _layers(value: Any) -> list[torch.Tensor]:
    """One (B, H, T, S) tensor or a per-layer list of them (None entries dropped) -> list."""
    if value is None:
        return []
    if isinstance(value, torch.Tensor):
        return [value]
    return [w for w in value if w is not None]


@torch.no_grad()
def attention_weights(model: Any, source: torch.Tensor, target_in: torch.Tensor) -> dict[str, list[torch.Tensor]]:
    """Teacher-forced attention weights of ``model`` for source (B, S) and target_in (B, T).

    Returns ``{kind: [per layer (B, H, queries, keys)]}`` for the kinds in :data:`KINDS`
    the model has (and any other key its decoder reports, under that key). A model
    without attention (e.g. the ``none`` scorer with a recurrent encoder) gives ``{}``.
    """
    with _returning_attention(model):
        enc = model.encode(source)
        out = model.decoder(target_in, enc)
    maps: dict[str, list[torch.Tensor]] = {}
    encoder_self = _layers(getattr(enc, "attention", None))
    if encoder_self:
        maps["encoder_self"] = encoder_self
    for key, value in (out.attention or {}).items():
        layers = _layers(value)
        if layers:
            maps["decoder_self" if key == "self" else key] = layers
    return maps


# --------------------------------------------------------------------------- drawing
def _draw(ax: Any, weights: torch.Tensor, rows: list[str], cols: list[str], title: str, fontsize: float) -> Any:
    image = ax.imshow(
        weights.float().cpu().numpy(), cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest"
    )
    ax.set_xticks(range(len(cols)), cols, rotation=90, fontsize=fontsize)
    ax.set_yticks(range(len(rows)), rows, fontsize=fontsize)
    ax.set_title(title, fontsize=fontsize + 2)
    return image


def heatmap_figure(weights: torch.Tensor, rows: list[str], cols: list[str], title: str) -> Figure:
    """One (queries, keys) weight matrix as a labelled heatmap with a 0..1 colour bar."""
    if tuple(weights.shape) != (len(rows), len(cols)):
        raise AttentionMapError(
            f"weights {tuple(weights.shape)} do not match {len(rows)} row and {len(cols)} column labels"
        )
    fig = Figure(figsize=(max(4.0, 0.3 * len(cols) + 2.5), max(3.0, 0.3 * len(rows) + 1.5)))
    ax = fig.add_subplot()
    image = _draw(ax, weights, rows, cols, title, fontsize=8)
    ax.set_xlabel("keys")
    ax.set_ylabel("queries")
    fig.colorbar(image, ax=ax, shrink=0.8)
    return fig


def grid_figure(weights: torch.Tensor, rows: list[str], cols: list[str], title: str) -> Figure:
    """All heads (H, queries, keys) of one layer side by side, :data:`GRID_COLUMNS` per row."""
    heads = weights.shape[0]
    ncols = min(heads, GRID_COLUMNS)
    nrows = math.ceil(heads / ncols)
    cell_w, cell_h = max(2.5, 0.22 * len(cols) + 1.2), max(2.2, 0.22 * len(rows) + 1.0)
    fig = Figure(figsize=(cell_w * ncols, cell_h * nrows + 0.5))
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for h, ax in enumerate(axes.flat):
        if h < heads:
            _draw(ax, weights[h], rows, cols, f"head {h + 1}", fontsize=7)
        else:
            ax.set_axis_off()
    fig.suptitle(title, y=1.02)  # above the head titles; savefig(bbox_inches="tight") keeps it
    return fig


# --------------------------------------------------------------------------- one sentence's attention
@dataclass
class SentenceAttention:
    """What a model attended to while translating one source: the weights and the labels of both axes."""

    source: Any
    output: str  # the decoded hypothesis as text
    maps: dict[str, list[torch.Tensor]]  # kind -> per layer (H, queries, keys) of this one source
    labels: dict[str, list[str]]  # "source", "target_in" (BOS + hypothesis), "target_out" (hypothesis + EOS)
    image: ImageGrid | None = None  # an image source: the grid the "source" positions are cells of, and its pixels

    @property
    def kinds(self) -> list[str]:
        """The kinds present, in :data:`KINDS` order, then any other kind a decoder reported."""
        return [k for k in KINDS if k in self.maps] + sorted(k for k in self.maps if k not in KINDS)

    def axes(self, kind: str) -> tuple[list[str], list[str]]:
        """(query labels, key labels) of ``kind``; an unknown kind is read like cross-attention."""
        row_axis, col_axis = AXES.get(kind, ("target_out", "source"))
        return self.labels[row_axis], self.labels[col_axis]


def sentence_attention(
    model: Any, task: Task, source: Any, decode_cfg: DecodeConfig | None = None
) -> SentenceAttention:
    """Decode one ``source`` (greedy unless ``decode_cfg`` says otherwise), then gather its attention weights.

    The model is put in eval mode for the duration and then restored. The task
    encodes the source and labels its positions (an image's are the cells of the
    frontend's grid, ``r0c0``, ...); the target tokenizer labels the output.
    """
    if isinstance(source, str) and not source.strip():
        raise AttentionMapError("the sentence is empty: there are no tokens to attend to; pass a non-empty sentence")
    encoded = task.encode_sources([source])[0]
    was_training = model.training
    model.eval()
    try:
        device = next(model.parameters()).device
        batch = task.collate_sources([encoded]).to(device)
        decode = decode_cfg or DecodeConfig(strategy="greedy")
        hypothesis = generate(model, batch, decode, max_len=task.output_limit(batch))[0]
        target_in = torch.tensor([[BOS, *hypothesis]], dtype=torch.long, device=device)
        maps = attention_weights(model, batch, target_in)
    finally:
        model.train(was_training)

    image = image_grid(model, task, source, encoded)
    hyp_labels = token_labels(task.target_tokenizer, hypothesis)
    labels = {
        "source": task.source_labels(encoded) or (image.labels if image else []),
        "target_in": [SPECIAL_TOKENS[BOS], *hyp_labels],
        "target_out": [*hyp_labels, SPECIAL_TOKENS[EOS]],
    }
    one = {kind: [weights[0].float().cpu() for weights in layers] for kind, layers in maps.items()}
    return SentenceAttention(source, task.decode_targets([hypothesis])[0], one, labels, image)


# --------------------------------------------------------------------------- the entry point
def write_attention_maps(
    model: Any,
    task: Task,
    source: Any,
    out_dir: str | Path,
    *,
    decode_cfg: DecodeConfig | None = None,
    wandb_run: Any = None,
) -> list[Path]:
    """Decode one ``source`` (a sentence for translation) and write its attention heatmaps as PNGs into ``out_dir``.

    Args:
        model: a :class:`zoo.model.Seq2Seq` (or anything with ``encode``/``decoder``).
            It is put in eval mode for the duration and then restored.
        task: the run's task, with its codecs loaded: it encodes the source, labels
            its positions and turns output ids into text.
        decode_cfg: how to translate (default: greedy with the default length limits).
        wandb_run: a ``wandb`` run; the pictures are also logged as ``wandb.Image``
            under ``attention/<file stem>``.
    Returns:
        The written files, in order: for each kind of :data:`KINDS` the model has,
        for each layer, ``<kind>_layer<l>_head<h>.png`` for every head, then
        ``<kind>_layer<l>_heads.png`` (the grid) when the layer has more than one
        head. Layers and heads count from 1. Rows are queries, columns keys:
        encoder self-attention source x source, decoder self-attention
        (BOS + hypothesis) x (BOS + hypothesis), cross-attention
        (hypothesis + EOS, the tokens being predicted) x source.
        A model without attention weights writes nothing and returns ``[]``.
    """
    attention = sentence_attention(model, task, source, decode_cfg)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for kind in attention.kinds:
        rows, cols = attention.axes(kind)
        for layer, weights in enumerate(attention.maps[kind], start=1):
            for head in range(weights.shape[0]):
                fig = heatmap_figure(weights[head], rows, cols, f"{kind} - layer {layer}, head {head + 1}")
                written.append(save_figure(fig, out_dir / f"{kind}_layer{layer}_head{head + 1}.png"))
            if weights.shape[0] > 1:
                fig = grid_figure(weights, rows, cols, f"{kind} - layer {layer}, all heads")
                written.append(save_figure(fig, out_dir / f"{kind}_layer{layer}_heads.png"))

    log_pictures(wandb_run, written, source)
    return written


def save_figure(fig: Figure, path: Path) -> Path:
    fig.savefig(path, dpi=100, bbox_inches="tight")
    return path


def log_pictures(wandb_run: Any, paths: list[Path], source: Any) -> None:
    """Log written pictures to W&B as ``attention/<file stem>``, captioned with their source; no run, no logging."""
    if wandb_run is not None and paths:
        import wandb

        wandb_run.log({f"attention/{path.stem}": wandb.Image(str(path), caption=str(source)) for path in paths})
