"""Small layers shared by several plugins."""

from __future__ import annotations

import math

import torch
from torch import nn

from zoo.contracts import PAD


class TargetEmbedding(nn.Module):
    """Target token embedding and the vocabulary projection, optionally tied.

    ``embed(y (B, T)) -> (B, T, embed_dim)`` and ``logits(h (..., hidden_dim)) -> (..., V)``.
    With ``tie=True`` the projection reuses the embedding matrix (Press & Wolf, 2017;
    Inan et al., 2017); when ``hidden_dim != embed_dim`` a linear map first brings the
    hidden vector to ``embed_dim`` so the shared matrix fits. ``scale=True`` multiplies
    embeddings by sqrt(embed_dim) (Vaswani et al., 2017), and draws them with standard deviation
    1/sqrt(embed_dim), so the scaled vectors start at unit size (the padding row zero).
    """

    def __init__(
        self, vocab_size: int, embed_dim: int, hidden_dim: int, tie: bool = False, scale: bool = False
    ) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=PAD)
        self.scale = math.sqrt(embed_dim) if scale else 1.0
        if tie:
            self.to_embed = nn.Linear(hidden_dim, embed_dim, bias=False) if hidden_dim != embed_dim else nn.Identity()
            self.output = nn.Linear(embed_dim, vocab_size)
            self.output.weight = self.embedding.weight
        else:
            self.to_embed = nn.Identity()
            self.output = nn.Linear(hidden_dim, vocab_size)
        if scale:
            nn.init.normal_(self.embedding.weight, std=1 / math.sqrt(embed_dim))
            with torch.no_grad():
                self.embedding.weight[PAD].zero_()

    def embed(self, y: torch.Tensor) -> torch.Tensor:
        """Token ids (B, T) -> vectors (B, T, embed_dim)."""
        return self.embedding(y) * self.scale

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        """Hidden vectors (..., hidden_dim) -> unnormalised vocabulary scores (..., V)."""
        return self.output(self.to_embed(h))
