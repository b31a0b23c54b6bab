"""The ``relative`` positional encoding: T5's learned bias per bucketed offset (Raffel et al., 2020)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from zoo.api import PosEnc, at_least, must_be, register


def relative_bucket(
    offset: torch.Tensor, bidirectional: bool, num_buckets: int = 32, max_distance: int = 128
) -> torch.Tensor:
    """Bucket index of each ``offset = key_position - query_position`` (Raffel et al., 2020).

    Bidirectional: half the buckets are for keys after the query, half for keys at
    or before it. Unidirectional (causal): all buckets are for the past; keys after
    the query (masked anyway) share bucket 0. Within a direction, distances below
    ``exact = buckets / 2`` get a bucket each; longer ones share buckets spaced
    logarithmically up to ``max_distance``, and everything beyond shares the last.
    """
    if bidirectional:
        num_buckets //= 2
        bucket = (offset > 0).long() * num_buckets
        distance = offset.abs()
    else:
        bucket = torch.zeros_like(offset)
        distance = (-offset).clamp(min=0)
    exact = num_buckets // 2
    log_ratio = torch.log(distance.clamp(min=exact).float() / exact) / math.log(max_distance / exact)
    far = (exact + (log_ratio * (num_buckets - exact)).long()).clamp(max=num_buckets - 1)
    return bucket + torch.where(distance < exact, distance, far)


@register("posenc", "relative")
class T5RelativeBias(PosEnc):
    """T5 relative position bias: a learned scalar per head and bucket of key-query offset (Raffel et al., 2020).

    One table (num_buckets, H) is shared by all layers of an encoder or decoder.
    The encoder buckets offsets in both directions, the causal decoder only into
    the past (see :func:`relative_bucket`). ``bias(T, S, q_offset, causal) -> (H, T, S)``.
    """

    relative = True

    @dataclass
    class Config:
        num_buckets: int = 32  # buckets of key-query offset (half per direction in the encoder)
        max_distance: int = 128  # offsets at least this far share the last bucket

        def __post_init__(self) -> None:
            at_least(self, "num_buckets", 4)
            must_be(self, "num_buckets", lambda n: n % 2 == 0, "even", "half are for each direction")
            at_least(
                self,
                "max_distance",
                self.num_buckets // 2 + 1,
                "the distances below num_buckets/2 already get one bucket each",
            )

    def __init__(self, cfg: Config, dim: int, heads: int = 1) -> None:
        super().__init__()
        self.num_buckets, self.max_distance = cfg.num_buckets, cfg.max_distance
        self.embedding = nn.Embedding(cfg.num_buckets, heads)
        nn.init.normal_(self.embedding.weight, std=0.02)

    def bias(self, t: int, s: int, q_offset: int = 0, causal: bool = False) -> torch.Tensor:
        device = self.embedding.weight.device
        queries = torch.arange(q_offset, q_offset + t, device=device)
        keys = torch.arange(s, device=device)
        buckets = relative_bucket(keys[None, :] - queries[:, None], not causal, self.num_buckets, self.max_distance)
        return self.embedding(buckets).permute(2, 0, 1)  # (T, S, H) -> (H, T, S)
