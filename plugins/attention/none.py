"""The ``none`` scorer: no attention at all (Cho et al., 2014; Sutskever et al., 2014)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from zoo.api import Attention, register


@register("attention", "none")
class NoAttention(Attention):
    """No attention: the decoder sees only the encoder's fixed-size summary.

    This is the original encoder-decoder of Cho et al. (2014) and Sutskever et al.
    (2014). ``attends = False`` tells a decoder not to call this scorer; ``forward``
    exists only to honour the contract and returns zeros (B, H, T, S).
    """

    attends = False

    @dataclass
    class Config:
        pass

    def __init__(self, cfg: Config, query_dim: int, key_dim: int, heads: int = 1) -> None:
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return q.new_zeros(q.shape[0], q.shape[1], q.shape[2], k.shape[2])
