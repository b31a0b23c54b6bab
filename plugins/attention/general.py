"""The ``general`` (bilinear) scorer: score(q, k) = q^T W k (Luong et al., 2015)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from zoo.api import Attention, register


@register("attention", "general")
class GeneralScorer(Attention):
    """Bilinear q^T W k with one learned W per head; query and key sizes may differ (Luong et al., 2015).

    ``W`` has shape (H, query_dim, key_dim).
    ``forward(q (B, H, T, dq), k (B, H, S, dk)) -> scores (B, H, T, S)``.
    """

    @dataclass
    class Config:
        pass

    def __init__(self, cfg: Config, query_dim: int, key_dim: int, heads: int = 1) -> None:
        super().__init__()
        bound = math.sqrt(6.0 / (query_dim + key_dim))  # Glorot & Bengio (2010) uniform init, per head
        self.weight = nn.Parameter(torch.empty(heads, query_dim, key_dim).uniform_(-bound, bound))

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        qw = torch.einsum("bhtq,hqk->bhtk", q, self.weight)  # (B, H, T, dk)
        return qw @ k.transpose(-1, -2)
