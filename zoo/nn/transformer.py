"""Building blocks shared by the Transformer encoder and decoder (Vaswani et al., 2017).

The shared config fields (:class:`TransformerLayout`), the residual wrapper with
pre- or post-normalisation (:class:`Residual`), the feed-forward sublayer and the
final norm of a pre-norm stack.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from zoo.nn.norms import NORMS, make_norm

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
