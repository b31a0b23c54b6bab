"""The ``tokens`` frontend: a learned embedding for each source token id."""

from __future__ import annotations

import math

import torch
from torch import nn

from zoo.api import PAD, SPECIAL_TOKENS, Frontend, SourceDescription, register

from .tokens_config import TokensConfig


@register("frontend", "tokens")
class TokenFrontend(Frontend):
    """Token embedding (optionally scaled by sqrt(dim)) followed by dropout.

    ``forward(source (B, S) long) -> (x (B, S, dim), mask (B, S) bool)`` where
    ``mask = source != PAD``. The PAD row of the embedding is zero and gets no
    gradient (``padding_idx``). ``scale=True`` multiplies by sqrt(dim), as
    Vaswani et al. (2017) do before adding sinusoidal positions; the weights then
    start at N(0, 1/dim) so the scaled vectors have unit variance, like the
    positions added to them (an N(0, 1) start would drown the positions).
    """

    Config = TokensConfig

    def __init__(self, cfg: Config, source: SourceDescription) -> None:
        super().__init__()
        vocab_size = source.vocab_size
        if vocab_size < len(SPECIAL_TOKENS):
            raise ValueError(
                f"tokens frontend got vocab_size={vocab_size}, but the {len(SPECIAL_TOKENS)} special tokens "
                f"{', '.join(SPECIAL_TOKENS)} alone need that many ids; train the tokenizer first"
            )
        self.output_dim = cfg.dim
        self.embedding = nn.Embedding(vocab_size, cfg.dim, padding_idx=PAD)
        self.scale = math.sqrt(cfg.dim) if cfg.scale else 1.0
        if cfg.scale:
            with torch.no_grad():
                self.embedding.weight.normal_(0.0, 1.0 / self.scale)
                self.embedding.weight[PAD].zero_()
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, source: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mask = source != PAD
        x = self.dropout(self.embedding(source) * self.scale)
        return x, mask
