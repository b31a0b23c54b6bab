"""The ``scaled_dot`` scorer: score(q, k) = q . k / sqrt(d) (Vaswani et al., 2017)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from zoo.api import Attention, register


@register("attention", "scaled_dot")
class ScaledDotScorer(Attention):
    """Scaled dot product q . k / sqrt(d); needs query_dim == key_dim (Vaswani et al., 2017).

    Dividing by sqrt(d) keeps the score variance near 1 when q and k have unit-variance entries, so the softmax does
    not saturate as d grows. Multi-head attention runs this scorer through torch's fused
    ``scaled_dot_product_attention`` when it can (``fused_sdpa``).

    ``forward(q (B, H, T, d), k (B, H, S, d)) -> scores (B, H, T, S)``.
    """

    needs_equal_dims = True
    fused_sdpa = True  # multi-head attention may run it through torch's fused kernel

    @dataclass
    class Config:
        pass

    def __init__(self, cfg: Config, query_dim: int, key_dim: int, heads: int = 1) -> None:
        super().__init__()
        self.check_dims(query_dim, key_dim)
        self.scale = 1.0 / math.sqrt(query_dim)

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return (q @ k.transpose(-1, -2)) * self.scale
