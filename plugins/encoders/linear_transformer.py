"""The ``linear_transformer`` encoder: Transformer blocks whose self-attention is linear (Katharopoulos et al., 2020),
optionally decayed (retention, Sun et al., 2023; gated linear attention, Yang et al., 2024)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from zoo.api import Encoder, EncoderOutput, register
from zoo.api.layers import FeedForward, LinearAttention, LinearLayout, Residual, final_norm

log = logging.getLogger(__name__)


class EncoderLayer(nn.Module):
    """Non-causal linear self-attention then feed-forward, each inside a :class:`Residual`."""

    def __init__(self, cfg: LinearLayout) -> None:
        super().__init__()
        self.self_attn = LinearAttention(cfg.d_model, cfg.heads, cfg.feature_map, cfg.gate, cfg.chunk_size)
        self.attn_residual = Residual(cfg)
        self.ff = FeedForward(cfg)
        self.ff_residual = Residual(cfg)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """x (B, S, D), mask (B, S) -> (B, S, D)."""
        x = self.attn_residual.close(x, self.self_attn(self.attn_residual.open(x), mask))
        return self.ff_residual.close(x, self.ff(self.ff_residual.open(x)))


@register("encoder", "linear_transformer")
class LinearTransformerEncoder(Encoder):
    """Transformer encoder with linear self-attention: time and memory linear in the source length.

    Each token reads phi(q)^T S / phi(q)^T z, with S = sum_j phi(k_j) v_j^T and z = sum_j phi(k_j) summed over the
    real tokens (Katharopoulos et al., 2020): no matrix of scores between all pairs of tokens is formed. With
    ``gate=retention`` or ``gate=gla`` the keys on both sides are decayed by the gates between them (a forward and a
    backward scan; zoo.api.layers.LinearAttention). A decay tells how far a key is, not on which side, so order
    comes from the absolute position encoding the model adds to the input (posenc=sinusoidal or learned); relative
    posencs act inside softmax scores, which this encoder has none of, and are refused. No scorer is used:
    phi(q) . phi(k) is the score. No attention weights are formed, so none are returned.

    Its natural input width is ``d_model``; an input of another width first goes through a linear projection.
    ``forward(x (B, S, D_in), mask (B, S)) -> EncoderOutput`` with ``memory`` (B, S, d_model), zero at padding,
    and ``state`` (B, d_model), the masked mean of ``memory``.
    """

    @dataclass
    class Config(LinearLayout):
        pass

    @staticmethod
    def natural_input_dim(cfg: Any) -> int:
        return cfg["d_model"]

    def __init__(self, cfg: Config, input_dim: int) -> None:
        super().__init__()
        self.input_proj = nn.Identity()
        if input_dim != cfg.d_model:
            log.info(
                "linear_transformer encoder: a linear map takes %d-wide inputs to d_model=%d", input_dim, cfg.d_model
            )
            self.input_proj = nn.Linear(input_dim, cfg.d_model)
        self.layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.layers))
        self.final_norm = final_norm(cfg)
        self.output_dim = self.state_dim = cfg.d_model

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> EncoderOutput:
        h = self.input_proj(x)
        for layer in self.layers:
            h = layer(h, mask)
        memory = self.final_norm(h).masked_fill(~mask[..., None], 0.0)
        state = memory.sum(1) / mask.sum(1, keepdim=True).clamp(min=1).to(memory.dtype)
        return EncoderOutput(memory, mask, state)
