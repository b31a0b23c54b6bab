"""The ``transformer`` encoder: stacked self-attention + feed-forward blocks (Vaswani et al., 2017).

This file also holds the pieces the ``transformer`` decoder reuses: the shared
config fields (:class:`TransformerLayout`), the residual wrapper with pre- or
post-normalisation (:class:`Residual`) and the feed-forward sublayer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from zoo import register
from zoo.contracts import Encoder, EncoderOutput
from zoo.multihead import MultiHeadAttention
from zoo.norms import NORMS, make_norm
from zoo.registry import build

ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU}
NORM_POSITIONS = ("pre", "post")


@dataclass
class TransformerLayout:
    """Config fields shared by the Transformer encoder and decoder."""

    layers: int = 3  # number of stacked blocks
    d_model: int = 256  # width of every block
    heads: int = 4  # attention heads per block; must divide d_model
    ff_dim: int = 1024  # hidden width of the feed-forward sublayer
    activation: str = "relu"  # relu | gelu (Hendrycks & Gimpel, 2016)
    dropout: float = 0.1  # on every sublayer output, inside the feed-forward sublayer and on decoder embeddings
    attention_dropout: float = 0.0  # on the attention weights
    norm_position: str = "pre"  # pre: x + f(norm(x)) and a final norm (Xiong et al., 2020) | post: norm(x + f(x)) (Vaswani et al., 2017)
    norm: str = "layernorm"  # layernorm | rmsnorm | dyt (Dynamic Tanh, Zhu et al., 2025)


def check_layout(cfg: TransformerLayout, what: str) -> None:
    """Reject impossible or misspelt layout choices with one clear line each."""
    if cfg.layers < 1:
        raise ValueError(f"{what}.layers must be >= 1, got {cfg.layers}")
    if cfg.d_model < 1 or cfg.heads < 1 or cfg.d_model % cfg.heads != 0:
        raise ValueError(f"{what}.d_model={cfg.d_model} must be a positive multiple of {what}.heads={cfg.heads}")
    if cfg.ff_dim < 1:
        raise ValueError(f"{what}.ff_dim must be >= 1, got {cfg.ff_dim}")
    if cfg.activation not in ACTIVATIONS:
        raise ValueError(f"{what}.activation='{cfg.activation}' is unknown; choose one of: {', '.join(ACTIVATIONS)}")
    if cfg.norm_position not in NORM_POSITIONS:
        raise ValueError(f"{what}.norm_position='{cfg.norm_position}' is unknown; choose pre or post")
    if cfg.norm not in NORMS:
        raise ValueError(f"{what}.norm='{cfg.norm}' is unknown; choose one of: {', '.join(NORMS)}")
    for name in ("dropout", "attention_dropout"):
        if not 0.0 <= getattr(cfg, name) < 1.0:
            raise ValueError(f"{what}.{name} must be in [0, 1), got {getattr(cfg, name)}")


class Residual(nn.Module):
    """A residual connection around a sublayer f, normalised before (pre) or after (post).

    pre: ``x + dropout(f(norm(x)))`` (Xiong et al., 2020); post: ``norm(x + dropout(f(x)))``
    (Vaswani et al., 2017). Use as ``out = r.close(x, f(r.open(x)))``.
    """

    def __init__(self, cfg: TransformerLayout) -> None:
        super().__init__()
        self.pre = cfg.norm_position == "pre"
        self.norm = make_norm(cfg.norm, cfg.d_model)
        self.dropout = nn.Dropout(cfg.dropout)

    def open(self, x: torch.Tensor) -> torch.Tensor:
        """The sublayer's input."""
        return self.norm(x) if self.pre else x

    def close(self, x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        """Add the sublayer's output ``out`` back to ``x``."""
        y = x + self.dropout(out)
        return y if self.pre else self.norm(y)


class FeedForward(nn.Sequential):
    """Position-wise feed-forward sublayer: Linear(d_model, ff_dim) -> activation -> dropout -> Linear(ff_dim, d_model)."""

    def __init__(self, cfg: TransformerLayout) -> None:
        super().__init__(
            nn.Linear(cfg.d_model, cfg.ff_dim),
            ACTIVATIONS[cfg.activation](),
            nn.Dropout(cfg.dropout),
            nn.Linear(cfg.ff_dim, cfg.d_model),
        )


def final_norm(cfg: TransformerLayout) -> nn.Module:
    """Pre-norm stacks end with one more norm (their residual stream is never normalised); post-norm needs none."""
    return make_norm(cfg.norm, cfg.d_model) if cfg.norm_position == "pre" else nn.Identity()


@dataclass
class TransformerEncoderOutput(EncoderOutput):
    """:class:`EncoderOutput` plus, when asked for, per-layer self-attention weights [(B, H, S, S)]."""

    attention: list[torch.Tensor] | None = None


class EncoderLayer(nn.Module):
    """Self-attention then feed-forward, each inside a :class:`Residual`."""

    def __init__(self, cfg: TransformerLayout, scorer: Any) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.heads, scorer, dropout=cfg.attention_dropout)
        self.attn_residual = Residual(cfg)
        self.ff = FeedForward(cfg)
        self.ff_residual = Residual(cfg)

    def forward(self, x, mask, posenc=None, need_weights=False):
        """x (B, S, D), mask (B, S) -> (x (B, S, D), weights (B, H, S, S) or None)."""
        out, weights = self.self_attn(self.attn_residual.open(x), key_mask=mask, posenc=posenc, need_weights=need_weights)
        x = self.attn_residual.close(x, out)
        x = self.ff_residual.close(x, self.ff(self.ff_residual.open(x)))
        return x, weights


@register("encoder", "transformer")
class TransformerEncoder(Encoder):
    """Transformer encoder: self-attention blocks over any scorer, pre/post norm, relative posencs inside attention (Vaswani et al., 2017).

    Built as ``cls(cfg, input_dim=D_in, scorer=<attention cfg>, posenc=<relative posenc cfg> or None)``.
    Absolute position encodings are added to the input by the model before the
    encoder; relative ones (rotary, alibi, relative) are built here, once, and
    shared by the self-attention of every layer. An input of width
    ``input_dim != d_model`` first goes through a linear projection. Input dropout
    is the frontend's job.

    ``forward(x (B, S, D_in), mask (B, S), need_weights=None) -> TransformerEncoderOutput``
    with ``memory`` (B, S, d_model) (zero at padding), ``state`` (B, d_model) = the
    masked mean of ``memory``, and ``attention`` = per-layer (B, H, S, S) weights when
    ``need_weights`` (default: the ``return_attention`` attribute, False) is set.
    """

    supports_relative_posenc = True
    uses_scorer = True  # self-attention scores with the run's `attention` scorer, per head

    @dataclass
    class Config(TransformerLayout):
        pass

    def __init__(self, cfg: Config, input_dim: int, scorer: Any, posenc: Any = None) -> None:
        super().__init__()
        check_layout(cfg, "encoder")
        self.posenc = None
        if posenc is not None:
            self.posenc = build("posenc", posenc, dim=cfg.d_model, heads=cfg.heads)
            if not self.posenc.relative:
                raise ValueError(
                    f"the transformer encoder builds only relative posencs; '{posenc['name']}' is absolute and is "
                    "added to the input before the encoder (see zoo.model.Seq2Seq)"
                )
        self.input_proj = nn.Linear(input_dim, cfg.d_model) if input_dim != cfg.d_model else nn.Identity()
        self.layers = nn.ModuleList(EncoderLayer(cfg, scorer) for _ in range(cfg.layers))
        self.final_norm = final_norm(cfg)
        self.output_dim = self.state_dim = cfg.d_model
        self.return_attention = False

    def forward(self, x: torch.Tensor, mask: torch.Tensor, need_weights: bool | None = None) -> TransformerEncoderOutput:
        need_weights = self.return_attention if need_weights is None else need_weights
        h = self.input_proj(x)
        maps = []
        for layer in self.layers:
            h, weights = layer(h, mask, self.posenc, need_weights)
            maps.append(weights)
        memory = self.final_norm(h).masked_fill(~mask[..., None], 0.0)
        state = memory.sum(1) / mask.sum(1, keepdim=True).clamp(min=1).to(memory.dtype)
        return TransformerEncoderOutput(memory, mask, state, maps if need_weights else None)
