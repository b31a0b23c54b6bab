"""The ``alibi`` positional encoding: a linear distance penalty per head (Press et al., 2022)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from zoo.api import PosEnc, register


def alibi_slopes(heads: int) -> torch.Tensor:
    """The per-head slopes of Press et al. (2022): (heads,).

    For ``heads = n`` a power of two the slopes are the geometric sequence
    2^(-8/n), 2^(-16/n), ..., 2^(-8). Otherwise take the n' = 2^floor(log2 heads)
    slopes of n' and add every other slope of 2n' until there are ``heads``.
    """

    def geometric(n: int) -> list[float]:
        return [2.0 ** (-8.0 * (i + 1) / n) for i in range(n)]

    if heads < 1:
        raise ValueError(f"alibi needs heads >= 1, got {heads}")
    base = 2 ** math.floor(math.log2(heads))
    slopes = geometric(base) + geometric(2 * base)[0::2][: heads - base]
    return torch.tensor(slopes)


@register("posenc", "alibi")
class ALiBi(PosEnc):
    """ALiBi: add -m_h * |i - j| to head h's score of query i and key j; nothing learned (Press et al., 2022).

    The slopes m_h come from :func:`alibi_slopes`. Press et al. define it for causal
    decoders (keys j <= i); the encoder uses the same penalty on |i - j| in both
    directions. ``bias(T, S, q_offset) -> (H, T, S)``.
    """

    relative = True

    @dataclass
    class Config:
        pass

    def __init__(self, cfg: Config, dim: int, heads: int = 1) -> None:
        super().__init__()
        self.register_buffer("slopes", alibi_slopes(heads), persistent=False)

    def bias(self, t: int, s: int, q_offset: int = 0, causal: bool = False) -> torch.Tensor:
        queries = torch.arange(q_offset, q_offset + t, device=self.slopes.device)
        keys = torch.arange(s, device=self.slopes.device)
        distance = (queries[:, None] - keys[None, :]).abs()  # (T, S)
        return -self.slopes[:, None, None] * distance
