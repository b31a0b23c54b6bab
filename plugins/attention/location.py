"""The ``location`` scorer: scores from the query alone, a = W_a q (Luong et al., 2015)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from zoo.api import Attention, at_least, register


@register("attention", "location")
class LocationScorer(Attention):
    """Location-based W_a q: one score per source position, ignoring the keys (Luong et al., 2015).

    ``W_a`` has shape (H, query_dim, max_len): the query alone says *where* to look,
    and the first S columns are the scores for a source of length S.
    ``forward(q (B, H, T, dq), k (B, H, S, dk)) -> scores (B, H, T, S)``; only
    ``k.shape[2]`` is used. Sources longer than ``max_len`` are an error.
    """

    @dataclass
    class Config:
        max_len: int = 256  # longest source this scorer can attend over

        def __post_init__(self) -> None:
            at_least(self, "max_len", 1)

    def __init__(self, cfg: Config, query_dim: int, key_dim: int, heads: int = 1) -> None:
        super().__init__()
        self.max_len = cfg.max_len
        bound = 1 / math.sqrt(query_dim)
        self.weight = nn.Parameter(torch.empty(heads, query_dim, cfg.max_len).uniform_(-bound, bound))

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        length = k.shape[2]
        if length > self.max_len:
            raise ValueError(
                f"location attention was built for at most max_len={self.max_len} source positions but got "
                f"{length}; raise attention.max_len or lower data.max_len"
            )
        return torch.einsum("bhtq,hqs->bhts", q, self.weight[:, :, :length])
