"""The ``learned`` positional encoding: one trained vector per position (Gehring et al., 2017; Devlin et al., 2019)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from zoo.api import ConfigError, PosEnc, at_least, register


@register("posenc", "learned")
class LearnedPositionalEncoding(PosEnc):
    """A trained embedding per absolute position, added to the vectors; positions past max_len are an error
    (refused at composition for training sequences; a longer evaluation sequence is a one-line error).

    The table P has shape (max_len, D), initialised N(0, 1): the scale of the token vectors it is added to (zoo's
    token frontend gives unit-variance vectors, scaled or not) and of the sinusoidal table. BERT's N(0, 0.02^2)
    (Devlin et al., 2019) matches BERT's token embeddings, not these: 50 times smaller than the tokens, a position
    is all but invisible at first, and a 2-layer Transformer stays at the key-blind guess on multi-query recall
    that it solves in 300 steps from N(0, 1) (docs/results.md, "The recall map").
    ``forward(x (B, T, D), offset) -> x + P[offset .. offset+T-1]``.
    """

    @dataclass
    class Config:
        max_len: int = 512  # number of positions with a trained vector

        def __post_init__(self) -> None:
            at_least(self, "max_len", 1)

        def check_composed(self, cfg: Any) -> None:
            """The table needs a vector for every position of a training sequence, which ``data`` bounds:
            at most ``data.max_len`` tokens, and no batch, so no sequence, holds more than ``data.max_tokens``."""
            longest = min(cfg.data.max_len, cfg.data.max_tokens)
            if self.max_len < longest:
                raise ConfigError(
                    f"max_len={self.max_len} positions are fewer than a training sequence may have ({longest}: "
                    f"data.max_len={cfg.data.max_len}, data.max_tokens={cfg.data.max_tokens}); "
                    f"raise posenc.max_len to {longest} or lower data.max_len"
                )

    def __init__(self, cfg: Config, dim: int, heads: int = 1) -> None:
        super().__init__()
        self.max_len = cfg.max_len
        self.embedding = nn.Embedding(cfg.max_len, dim)
        nn.init.normal_(self.embedding.weight, std=1.0)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        end = offset + x.shape[1]
        if end > self.max_len:
            raise ConfigError(
                f"learned positional encoding has max_len={self.max_len} positions but position {end - 1} was asked "
                f"(length {x.shape[1]} at offset {offset}); raise posenc.max_len: evaluation sources (up to "
                f"data.max_tokens) and the outputs decoded from them may be longer than training sequences"
            )
        positions = torch.arange(offset, end, device=x.device)
        return x + self.embedding(positions).to(x.dtype)
