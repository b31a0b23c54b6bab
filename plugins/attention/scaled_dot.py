"""The ``scaled_dot`` scorer: score(q, k) = q . k / sqrt(d) (Vaswani et al., 2017).

It extends the ``dot`` scorer: a plugin may subclass another plugin.
"""

from __future__ import annotations

import math

import torch
from zoo_plugins.attention.dot import DotScorer

from zoo import register


@register("attention", "scaled_dot")
class ScaledDotScorer(DotScorer):
    """Scaled dot product q . k / sqrt(d); needs query_dim == key_dim (Vaswani et al., 2017).

    Dividing by sqrt(d) keeps the score variance near 1 when q and k have unit-variance
    entries, so the softmax does not saturate as d grows. Multi-head attention runs
    this scorer through torch's fused ``scaled_dot_product_attention`` when it can.
    ``forward(q (B, H, T, d), k (B, H, S, d)) -> scores (B, H, T, S)``.
    """

    def __init__(self, cfg: DotScorer.Config, query_dim: int, key_dim: int, heads: int = 1) -> None:
        super().__init__(cfg, query_dim, key_dim, heads)
        self.scale = 1.0 / math.sqrt(query_dim)

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return super().forward(q, k) * self.scale
