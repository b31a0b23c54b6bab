"""The ``cosine`` scorer: score(q, k) = tau * cos(q, k)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from zoo.api import Attention, positive, register


@register("attention", "cosine")
class CosineScorer(Attention):
    """Cosine similarity times a (learnable) temperature; needs query_dim == key_dim.

    score(q, k) = tau * q.k / (|q| |k|). Cosine similarity bounds scores to
    [-tau, tau] whatever the vector norms, as in Graves et al. (2014)'s content
    addressing (key strength beta) and Liu et al. (2022)'s Swin V2 attention, which
    learns the temperature as a log-scale parameter. Here log(tau) has one entry per
    head, shape (H,); with ``learnable=False`` it is a fixed buffer.
    ``forward(q (B, H, T, d), k (B, H, S, d)) -> scores (B, H, T, S)``.
    """

    needs_equal_dims = True

    @dataclass
    class Config:
        temperature: float = 10.0  # initial tau; cosine scores lie in [-tau, tau]
        learnable: bool = True  # learn log(tau) per head

        def __post_init__(self) -> None:
            positive(self, "temperature")

    def __init__(self, cfg: Config, query_dim: int, key_dim: int, heads: int = 1) -> None:
        super().__init__()
        self.check_dims(query_dim, key_dim)
        log_tau = torch.full((heads,), math.log(cfg.temperature))
        if cfg.learnable:
            self.log_temperature = nn.Parameter(log_tau)
        else:
            self.register_buffer("log_temperature", log_tau)

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return self.score_prepared(q, self.prepare_keys(k))

    def prepare_keys(self, k: torch.Tensor) -> torch.Tensor:
        """Unit keys k / |k| (B, H, S, d): independent of the query, so a decoder normalises them once per sentence."""
        return F.normalize(k, dim=-1)

    def score_prepared(self, q: torch.Tensor, unit_keys: torch.Tensor) -> torch.Tensor:
        cos = F.normalize(q, dim=-1) @ unit_keys.transpose(-1, -2)  # (B, H, T, S)
        return cos * self.log_temperature.exp()[:, None, None]
