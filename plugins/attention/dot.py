"""The ``dot`` scorer: score(q, k) = q . k (Luong et al., 2015)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from zoo.api import Attention, register


@register("attention", "dot")
class DotScorer(Attention):
    """Dot product q . k; no parameters, needs query_dim == key_dim (Luong et al., 2015).

    ``forward(q (B, H, T, d), k (B, H, S, d)) -> scores (B, H, T, S)``.
    """

    needs_equal_dims = True

    @dataclass
    class Config:
        pass

    def __init__(self, cfg: Config, query_dim: int, key_dim: int, heads: int = 1) -> None:
        super().__init__()
        self.check_dims(query_dim, key_dim)

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return q @ k.transpose(-1, -2)
