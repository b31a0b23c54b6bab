"""The ``transformer`` encoder: stacked self-attention + feed-forward blocks (Vaswani et al., 2017)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from zoo.api import ConfigError, Encoder, EncoderOutput, build, register
from zoo.api.layers import FeedForward, Residual, TransformerLayout, final_norm, layout_attention

log = logging.getLogger(__name__)


@dataclass
class TransformerEncoderOutput(EncoderOutput):
    """:class:`EncoderOutput` plus, when asked for, per-layer self-attention weights [(B, H, S, S)]."""

    attention: list[torch.Tensor] | None = None


class EncoderLayer(nn.Module):
    """Self-attention then feed-forward, each inside a :class:`Residual`."""

    def __init__(self, cfg: TransformerEncoder.Config, scorer: Any) -> None:
        super().__init__()
        self.self_attn = layout_attention(cfg, scorer, projections=cfg.self_attention_projections)
        self.attn_residual = Residual(cfg)
        self.ff = FeedForward(cfg)
        self.ff_residual = Residual(cfg)

    def forward(self, x, mask, posenc=None, need_weights=False):
        """x (B, S, D), mask (B, S) -> (x (B, S, D), weights (B, H, S, S) or None)."""
        out, weights = self.self_attn(
            self.attn_residual.open(x), key_mask=mask, posenc=posenc, need_weights=need_weights
        )
        x = self.attn_residual.close(x, out)
        x = self.ff_residual.close(x, self.ff(self.ff_residual.open(x)))
        return x, weights


@register("encoder", "transformer")
class TransformerEncoder(Encoder):
    """Transformer encoder: self-attention blocks, any scorer, pre/post norm, relative posencs (Vaswani et al., 2017).

    Built as ``cls(cfg, input_dim=D_in, scorer=<attention cfg>, posenc=<relative posenc cfg> or None)``.
    Absolute position encodings are added to the input by the model before the
    encoder; relative ones (rotary, alibi, relative) are built here, once, and
    shared by the self-attention of every layer. Its natural input width is
    ``d_model`` (a frontend with ``dim: null`` takes it); an input of another width
    first goes through a linear projection, which is logged. Input dropout is the
    frontend's job.

    ``forward(x (B, S, D_in), mask (B, S), need_weights=None) -> TransformerEncoderOutput``
    with ``memory`` (B, S, d_model) (zero at padding), ``state`` (B, d_model) = the
    masked mean of ``memory``, and ``attention`` = per-layer (B, H, S, S) weights when
    ``need_weights`` (default: the ``return_attention`` attribute, False) is set.

    ``self_attention_projections=false`` makes self-attention parameter-free, the form
    taught before learned projections: each token's vector, split into heads, is
    scored against the others' with the scorer, and the softmax weights mix the
    vectors themselves (no W_q, W_k, W_v, W_o; a scorer's own parameters remain).
    """

    supports_relative_posenc = True
    uses_scorer = True  # self-attention scores with the run's self-attention scorer, per head

    @dataclass
    class Config(TransformerLayout):
        # false: parameter-free self-attention, the vectors themselves are queries, keys and values
        self_attention_projections: bool = True

        def __post_init__(self) -> None:
            super().__post_init__()
            if not self.self_attention_projections and (self.kv_heads not in (None, self.heads) or self.kv_latent_dim):
                raise ConfigError(
                    "self_attention_projections=False compares the vectors themselves, so it has no key/value "
                    "layout; leave kv_heads and kv_latent_dim unset"
                )

    @staticmethod
    def natural_input_dim(cfg: Any) -> int:
        return cfg["d_model"]

    def __init__(self, cfg: Config, input_dim: int, scorer: Any, posenc: Any = None) -> None:
        super().__init__()
        self.posenc = None
        if posenc is not None:
            self.posenc = build("posenc", posenc, dim=cfg.d_model, heads=cfg.heads)
            if not self.posenc.relative:
                raise ValueError(
                    f"the transformer encoder builds only relative posencs; '{posenc['name']}' is absolute and is "
                    "added to the input before the encoder (see zoo.model.Seq2Seq)"
                )
        self.input_proj = nn.Identity()
        if input_dim != cfg.d_model:
            log.info(
                "transformer encoder: a linear map takes %d-wide inputs to d_model=%d "
                "(leave frontend.dim unset to embed at d_model)",
                input_dim,
                cfg.d_model,
            )
            self.input_proj = nn.Linear(input_dim, cfg.d_model)
        self.layers = nn.ModuleList(EncoderLayer(cfg, scorer) for _ in range(cfg.layers))
        self.final_norm = final_norm(cfg)
        self.output_dim = self.state_dim = cfg.d_model
        self.return_attention = False

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor, need_weights: bool | None = None
    ) -> TransformerEncoderOutput:
        need_weights = self.return_attention if need_weights is None else need_weights
        h = self.input_proj(x)
        maps = []
        for layer in self.layers:
            h, weights = layer(h, mask, self.posenc, need_weights)
            maps.append(weights)
        memory = self.final_norm(h).masked_fill(~mask[..., None], 0.0)
        state = memory.sum(1) / mask.sum(1, keepdim=True).clamp(min=1).to(memory.dtype)
        return TransformerEncoderOutput(memory, mask, state, maps if need_weights else None)
