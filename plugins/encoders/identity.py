"""The ``identity`` encoder: the frontend's vectors are the memory, their mean the summary."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from zoo.api import Encoder, EncoderOutput, register


@register("encoder", "identity")
class IdentityEncoder(Encoder):
    """No encoding at all: the decoder attends straight to what the frontend made.

    Captioning's classic setting: Show, Attend and Tell (Xu et al., 2015) attends
    over the CNN's grid without an encoder between, and Show and Tell (Vinyals et
    al., 2015) starts the decoder from the pooled image, which is ``state`` here.
    For text it is a bag-of-embeddings baseline: what an encoder adds on top of
    the embeddings. ``forward(x (B, S, D), mask (B, S)) -> EncoderOutput`` with
    ``memory = x`` (zero at padding) and ``state`` (B, D) the mean over real positions.
    """

    @dataclass
    class Config:
        pass

    def __init__(self, cfg: Config, input_dim: int) -> None:
        super().__init__()
        self.output_dim = self.state_dim = input_dim

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> EncoderOutput:
        weights = mask.unsqueeze(-1).to(x.dtype)
        memory = x * weights
        state = memory.sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)
        return EncoderOutput(memory=memory, mask=mask, state=state)
