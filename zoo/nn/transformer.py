"""Building blocks shared by the Transformer encoder and decoder (Vaswani et al., 2017).

The shared config fields (:class:`TransformerLayout`), a block's attention in that
layout (:func:`layout_attention`), the residual wrapper with
pre- or post-normalisation (:class:`Residual`), the feed-forward sublayer and the
final norm of a pre-norm stack.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from zoo.config.checks import (
    TRAINED_BYTES,
    Choice,
    at_least,
    in_unit_interval,
    multiple_of,
    no_wider_than,
    one_of,
    within_memory,
)
from zoo.nn.multihead import MultiHeadAttention
from zoo.nn.norms import Norm, make_norm


class Activation(Choice):
    """The feed-forward sublayer's nonlinearity."""

    relu = "relu"
    gelu = "gelu"


class NormPosition(Choice):
    """Where a block normalises: before each sublayer (``pre``) or after the residual sum (``post``)."""

    pre = "pre"
    post = "post"


ACTIVATIONS = {Activation.relu: nn.ReLU, Activation.gelu: nn.GELU}


@dataclass
class TransformerLayout:
    """Config fields shared by the Transformer encoder and decoder."""

    layers: int = 3  # number of stacked blocks
    d_model: int = 256  # width of every block
    heads: int = 4  # attention heads per block; must divide d_model
    ff_dim: int = 1024  # hidden width of the feed-forward sublayer
    activation: Activation = Activation.relu  # of the feed-forward sublayer; gelu: Hendrycks & Gimpel (2016)
    dropout: float = 0.1  # on every sublayer output, inside the feed-forward sublayer and on decoder embeddings
    attention_dropout: float = 0.0  # on the attention weights
    # pre: x + f(norm(x)) and a final norm (Xiong et al., 2020) | post: norm(x + f(x)) (Vaswani et al., 2017)
    norm_position: NormPosition = NormPosition.pre
    # layernorm (Ba et al., 2016) | rmsnorm (Zhang & Sennrich, 2019) | dyt: Dynamic Tanh (Zhu et al., 2025)
    norm: Norm = Norm.layernorm
    # key/value heads shared by groups of query heads: null = heads | 1: multi-query (Shazeer, 2019)
    # | else grouped-query (Ainslie et al., 2023)
    kv_heads: int | None = None
    # multi-head latent attention (DeepSeek-V2, 2024): cache this latent instead of keys and values
    kv_latent_dim: int | None = None

    def __post_init__(self) -> None:
        for field in ("layers", "d_model", "heads", "ff_dim", "kv_heads", "kv_latent_dim"):
            at_least(self, field, 1)
        multiple_of(self, "d_model", "heads", "choose heads that divide d_model")
        multiple_of(self, "heads", "kv_heads", "each key/value head serves a whole group of query heads")
        in_unit_interval(self, "dropout")
        in_unit_interval(self, "attention_dropout")
        one_of(self, "activation", Activation)
        one_of(self, "norm_position", NormPosition)
        one_of(self, "norm", Norm)
        no_wider_than(
            self,
            "kv_latent_dim",
            "d_model",
            "the latent compresses d_model-wide vectors: a wider one holds nothing more and only costs",
        )
        if self.d_model is not None:  # a decoder's null d_model is checked again once it has the encoder's width
            within_memory(
                self,
                ("d_model", "ff_dim", "layers"),
                2 * self.d_model * self.ff_dim * self.layers * TRAINED_BYTES,
                "the feed-forward weights in training",
            )


def layout_attention(cfg: TransformerLayout, scorer: Any, **kwargs: Any) -> MultiHeadAttention:
    """A block's multi-head attention with the layout's width, heads, key/value layout and attention dropout."""
    return MultiHeadAttention(
        cfg.d_model,
        cfg.heads,
        scorer,
        dropout=cfg.attention_dropout,
        kv_heads=cfg.kv_heads,
        kv_latent_dim=cfg.kv_latent_dim,
        **kwargs,
    )


class Residual(nn.Module):
    """A residual connection around a sublayer f, normalised before (pre) or after (post).

    pre: ``x + dropout(f(norm(x)))`` (Xiong et al., 2020); post: ``norm(x + dropout(f(x)))``
    (Vaswani et al., 2017). Use as ``out = r.close(x, f(r.open(x)))``.
    """

    def __init__(self, cfg: TransformerLayout) -> None:
        super().__init__()
        self.pre = cfg.norm_position == NormPosition.pre
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
    """Position-wise feed-forward sublayer: Linear(d_model, ff_dim) -> activation -> dropout -> Linear(ff_dim,
    d_model)."""

    def __init__(self, cfg: TransformerLayout) -> None:
        super().__init__(
            nn.Linear(cfg.d_model, cfg.ff_dim),
            ACTIVATIONS[cfg.activation](),
            nn.Dropout(cfg.dropout),
            nn.Linear(cfg.ff_dim, cfg.d_model),
        )


def final_norm(cfg: TransformerLayout) -> nn.Module:
    """Pre-norm stacks end with one more norm (their residual stream is never normalised); post-norm needs none."""
    return make_norm(cfg.norm, cfg.d_model) if cfg.norm_position == NormPosition.pre else nn.Identity()
