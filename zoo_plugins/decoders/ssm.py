"""State-space decoders: ``s4d`` (Gu et al., 2022) and ``mamba`` (Gu & Dao, 2023), which generate from a state of
constant size.

Both read the encoder memory as a prefix of the target: the decoder's stack of state-space blocks first consumes
the projected memory, then the target tokens, so everything the target learns of the source passes through the
state (as in a decoder-only language model given the source before its output). They differ only in the layer
(zoo.api.layers.S4DLayout, MambaLayout), so they share one base class (as the encoders in encoders/ssm.py do).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from zoo.api import PAD, Decoder, DecoderOutput, EncoderOutput, build, register
from zoo.api.layers import MambaLayout, S4DLayout, SSMStack, TargetEmbedding, padding_first


class SSMDecoder(Decoder):
    """Shared code of the ``s4d`` and ``mamba`` decoders.

    The prefix: the memory (B, S, memory_dim) through a linear map to d_model, with each row's padding moved
    before its real steps (zoo.api.layers.padding_first). Every block zeroes its layer's input at padded steps
    (and a Mamba block's step Δ is 0 there, which leaves its state unchanged), so the state reaches the first
    real step still zero: padded memory positions never touch it, however many there are. Then the target:
    embeddings scaled by sqrt(d_model) and initialised N(0, 1/d_model), tied to the output projection with
    ``tie_embeddings``; an absolute posenc is added to them (at offset t while stepping); a relative one acts
    inside attention scores, which this decoder has none of, and is refused. The run's attention scorers are
    not used; ``d_model`` defaults to ``memory_dim``; ``state_dim`` is unused.

    ``forward(y_in (B, T), enc) -> DecoderOutput(logits (B, T, V), attention=None)``: the stack over prefix and
    target in its parallel form. ``init_cache(enc)`` runs the same stack over the prefix alone and keeps each
    block's state after it; ``step(y_t (B,), enc, cache, t) -> (logits (B, V), cache, None)`` advances them by
    one token. The cache never grows, and a step costs the same whatever the source and output lengths.
    """

    uses_scorer = False  # the run's cross-attention scorer is not used

    def __init__(
        self,
        cfg: Any,
        vocab_size: int,
        memory_dim: int,
        state_dim: int = 0,
        scorer: Any = None,
        posenc: Any = "sinusoidal",
    ) -> None:
        super().__init__()
        posenc = {"name": posenc} if isinstance(posenc, str) else posenc
        cfg = dataclasses.replace(cfg, d_model=cfg.d_model or memory_dim)
        d = cfg.d_model
        self.posenc = build("posenc", posenc, dim=d, heads=1)
        if self.posenc.relative:
            raise ValueError(
                f"posenc '{posenc['name']}' acts inside attention scores, which a state-space decoder does not "
                "form; use posenc=none (the recurrence knows the order), sinusoidal or learned"
            )
        self.memory_proj = nn.Linear(memory_dim, d)
        self.target = TargetEmbedding(vocab_size, d, d, tie=cfg.tie_embeddings, scale=True)
        nn.init.normal_(self.target.embedding.weight, std=1 / math.sqrt(d))
        with torch.no_grad():
            self.target.embedding.weight[PAD].zero_()
        self.dropout = nn.Dropout(cfg.dropout)
        self.stack = SSMStack(cfg)

    def _prefix(self, enc: EncoderOutput) -> tuple[torch.Tensor, torch.Tensor]:
        """The memory as the stack's first steps: (B, S, d_model) and its mask (B, S), padding first."""
        return padding_first(self.dropout(self.memory_proj(enc.memory)), enc.mask)

    def _embed(self, y: torch.Tensor, offset: int) -> torch.Tensor:
        """Token ids (B, T) at positions offset.. -> stack input (B, T, d_model)."""
        return self.dropout(self.posenc(self.target.embed(y), offset))

    def forward(self, y_in: torch.Tensor, enc: EncoderOutput) -> DecoderOutput:
        prefix, mask = self._prefix(enc)
        x = torch.cat([prefix, self._embed(y_in, 0)], dim=1)
        mask = torch.cat([mask, mask.new_ones(y_in.shape)], dim=1)
        h = self.stack(x, mask)[:, prefix.shape[1] :]
        return DecoderOutput(self.target.logits(h))

    def init_cache(self, enc: EncoderOutput) -> dict:
        """Every block's state after the prefix: S4D's (B, d_model, d_state) complex, Mamba's convolution window
        (B, E, d_conv - 1) and SSM state (B, E, d_state)."""
        _, states = self.stack(*self._prefix(enc), return_state=True)
        return {"layers": states}

    def step(self, y_t: torch.Tensor, enc: EncoderOutput, cache: dict, t: int):
        h, states = self.stack.step(self._embed(y_t[:, None], t)[:, 0], cache["layers"])
        return self.target.logits(h), {"layers": states}, None


@register("decoder", "s4d")
class S4DDecoder(SSMDecoder):
    """S4D decoder: diagonal state-space layers (Gu et al., 2022) read the source as a prefix; constant-size state.

    Teacher forcing runs each block's SSM as a causal convolution (FFT) over prefix and target; generation, as
    its recurrence.
    """

    @dataclass
    class Config(S4DLayout):
        d_model: int | None = None  # width of the residual stream; null: the encoder's output width
        tie_embeddings: bool = True  # the output projection shares the target embedding matrix


@register("decoder", "mamba")
class MambaDecoder(SSMDecoder):
    """Mamba decoder: selective state-space blocks (Gu & Dao, 2023) read the source as a prefix; constant-size state.

    Teacher forcing runs each block's selective SSM as a parallel scan over prefix and target; generation, one
    step of its recurrence (the convolution window and the SSM state) per token.
    """

    @dataclass
    class Config(MambaLayout):
        d_model: int | None = None  # width of the residual stream; null: the encoder's output width
        tie_embeddings: bool = True  # the output projection shares the target embedding matrix
