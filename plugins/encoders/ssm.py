"""State-space encoders: ``s4d`` (Gu et al., 2022) and ``mamba`` (Gu & Dao, 2023), optionally bidirectional.

Both are stacks of pre-norm residual blocks around a state-space layer (zoo.api.layers.SSMStack) and differ only
in that layer, so they share one base class (as the ``rnn``, ``gru`` and ``lstm`` encoders do):

* ``s4d``: a diagonal SSM per channel, the same at every step, computed as a long causal convolution, then a
  gated channel mix;
* ``mamba``: a selective SSM whose step, input and output maps are computed from each token, inside a gated
  block with a short convolution, computed by a parallel scan.

Time and memory grow linearly with the source length, and no attention weights are formed, unless
``attention_every`` places a softmax self-attention layer after every k-th block (a hybrid, as Jamba interleaves
them, Lieber et al., 2024: Zoology finds a few such layers close most of the recall gap to attention, Arora et
al., 2023); it is causal when the encoder reads left to right, and scores with the run's self-attention scorer.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from zoo.api import Encoder, EncoderOutput, at_least, multiple_of, register
from zoo.api.layers import AttentionSublayer, HybridLayout, MambaLayout, S4DLayout, SSMStack

log = logging.getLogger(__name__)


@dataclass
class EncoderHybrid:
    """The fields a state-space encoder adds to its family's layout (mixed in before it, so both are checked):
    its direction and its attention layers."""

    bidirectional: bool = True  # each block also reads the sentence right-to-left (a second SSM)
    attention_every: int = 0  # a softmax self-attention layer after every k-th block (a hybrid); 0: none
    attention_heads: int = 4  # heads of those layers; must divide d_model

    def __post_init__(self) -> None:
        super().__post_init__()  # the family's layout
        at_least(self, "attention_every", 0)
        at_least(self, "attention_heads", 1)
        if self.attention_every:
            multiple_of(self, "d_model", "attention_heads", "choose attention_heads that divide d_model")


class SSMEncoder(Encoder):
    """Shared code of the ``s4d`` and ``mamba`` encoders.

    ``forward(x (B, S, D_in), mask (B, S)) -> EncoderOutput`` with ``memory`` (B, S, d_model), zero at padding,
    and ``state`` (B, d_model), the masked mean of ``memory``. Its natural input width is ``d_model``; an input of
    another width first goes through a linear map. Every block is causal, so the padding at the end of a row never
    reaches its real steps; with ``bidirectional`` each block adds a second layer's pass over the sequence
    reversed within its real length (the padding stays at the end), so every step sees both sides. Order comes
    from the recurrence itself: no position encoding is needed (posenc=none). With ``attention_every`` k, a
    pre-norm residual softmax self-attention layer follows blocks k, 2k, ... (built with ``scorer``, the run's
    self-attention scorer), causal unless the encoder is bidirectional.
    """

    @classmethod
    def scores_with(cls, cfg: Any) -> bool:
        """Only with attention layers placed."""
        return bool(cfg.get("attention_every"))

    def __init__(self, cfg: Any, input_dim: int, scorer: Any = None) -> None:
        super().__init__()
        self.input_proj = nn.Identity()
        if input_dim != cfg.d_model:
            log.info(
                "%s encoder: a linear map takes %d-wide inputs to d_model=%d",
                type(self).__name__,
                input_dim,
                cfg.d_model,
            )
            self.input_proj = nn.Linear(input_dim, cfg.d_model)
        self.stack = SSMStack(cfg, bidirectional=cfg.bidirectional)
        self.causal = not cfg.bidirectional
        every, layout = cfg.attention_every, HybridLayout(heads=cfg.attention_heads)
        after = range(every, cfg.layers + 1, every) if every else range(0)  # the blocks an attention layer follows
        self.attention = nn.ModuleDict(
            {str(block): AttentionSublayer(layout, cfg.d_model, cfg.norm, cfg.dropout, scorer) for block in after}
        )
        self.output_dim = self.state_dim = cfg.d_model

    @staticmethod
    def natural_input_dim(cfg: Any) -> int:
        return cfg["d_model"]

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> EncoderOutput:
        h = self.input_proj(x)
        for number, block in enumerate(self.stack.blocks, start=1):
            h, _ = block(h, mask, False)
            if str(number) in self.attention:
                h, _ = self.attention[str(number)](h, key_mask=mask, causal=self.causal)
        memory = self.stack.final_norm(h).masked_fill(~mask[..., None], 0.0)
        state = memory.sum(1) / mask.sum(1, keepdim=True).clamp(min=1).to(memory.dtype)
        return EncoderOutput(memory, mask, state)


@register("encoder", "s4d")
class S4DEncoder(SSMEncoder):
    """S4D encoder: diagonal state-space layers run as long convolutions (Gu et al., 2022); optionally bidirectional.

    Each block: S4D (complex diagonal A, S4D-Lin initialised; a learnt step Δ per channel; ZOH) mixes every channel
    over time by the convolution with its kernel, applied with the FFT; then GELU and a gated linear map mix the
    channels (zoo.api.layers.S4DMixer).
    """

    @dataclass
    class Config(EncoderHybrid, S4DLayout):
        pass


@register("encoder", "mamba")
class MambaEncoder(SSMEncoder):
    """Mamba encoder: selective state-space blocks run as a parallel scan (Gu & Dao, 2023); optionally bidirectional.

    Each block: in-projection to x and z, a short causal convolution and SiLU on x, an SSM whose Δ, B and C are
    computed from each token, the result gated by SiLU(z) and projected back (zoo.api.layers.Mamba).
    """

    @dataclass
    class Config(EncoderHybrid, MambaLayout):
        pass
