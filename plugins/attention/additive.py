"""The ``additive`` scorer: score(q, k) = v^T tanh(W_q q + W_k k) (Bahdanau et al., 2015)."""

from __future__ import annotations

import math

import torch
from torch import nn

from zoo.api import Attention, register

from .additive_config import AdditiveConfig


@register("attention", "additive")
class AdditiveScorer(Attention):
    """Additive (MLP) attention v^T tanh(W_q q + W_k k), one MLP per head (Bahdanau et al., 2015).

    Parameters per head: ``W_q`` (H, dq, A), ``W_k`` (H, dk, A), ``v`` (H, A), where
    A = ``hidden_size``. Queries and keys are projected separately, then
    broadcast-added as (B, H, T, 1, A) + (B, H, 1, S, A), so the concatenation
    [q; k] is never materialised for every (t, s) pair.
    ``forward(q (B, H, T, dq), k (B, H, S, dk)) -> scores (B, H, T, S)``.
    """

    Config = AdditiveConfig

    def __init__(self, cfg: Config, query_dim: int, key_dim: int, heads: int = 1) -> None:
        super().__init__()
        a = cfg.hidden_size
        self.w_q = nn.Parameter(_uniform(heads, query_dim, a))
        self.w_k = nn.Parameter(_uniform(heads, key_dim, a))
        self.v = nn.Parameter(_uniform(heads, a))

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return self.score_prepared(q, self.prepare_keys(k))

    def prepare_keys(self, k: torch.Tensor) -> torch.Tensor:
        """W_k k (B, H, S, A): independent of the query, so a decoder computes it once per sentence."""
        return torch.einsum("bhsk,hka->bhsa", k, self.w_k)

    def score_prepared(self, q: torch.Tensor, pk: torch.Tensor) -> torch.Tensor:
        pq = torch.einsum("bhtq,hqa->bhta", q, self.w_q)  # (B, H, T, A)
        hidden = torch.tanh(pq.unsqueeze(3) + pk.unsqueeze(2))  # (B, H, T, S, A)
        return torch.einsum("bhtsa,ha->bhts", hidden, self.v)


def _uniform(heads: int, fan_in: int, *rest: int) -> torch.Tensor:
    """U(-1/sqrt(fan_in), 1/sqrt(fan_in)), the default init of ``nn.Linear``, for (heads, fan_in, *rest)."""
    bound = 1 / math.sqrt(fan_in)
    return torch.empty(heads, fan_in, *rest).uniform_(-bound, bound)
