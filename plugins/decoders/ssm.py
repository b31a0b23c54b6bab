"""State-space decoders: ``s4d`` (Gu et al., 2022) and ``mamba`` (Gu & Dao, 2023), which generate from a state of
constant size, in every layout a comparison of state-space translators needs (Pitorro et al., WMT 2024):

* **decoder-only** (``prefix: forward``, no attention layers, the default): the stack reads the encoder memory as
  a prefix of the target, so everything the target learns of the source passes through the state, as in a
  decoder-only language model given the source before its output (``prefix: reversed``: its last word first, so
  the source's beginning is read last, nearest the target's beginning, as Sutskever et al., 2014, fed an LSTM);
* **encoder-decoder** (``prefix: none``, ``cross_every: 1``): the target alone runs through the blocks, and a
  softmax cross-attention layer after each reads the memory, as a Transformer decoder's does;
* **hybrid** (cross-attention after some blocks, a causal self-attention layer after some, with or without the
  prefix): Jamba's interleaving (Lieber et al., 2024); Pitorro et al.'s Mamba-MHA.

The two differ only in the layer (zoo.api.layers.S4DLayout, MambaLayout), so they share one base class (as the
encoders in encoders/ssm.py do); the attention layers are zoo.api.layers.AttentionLayers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from zoo.api import (
    Choice,
    ConfigError,
    Decoder,
    DecoderOutput,
    EncoderOutput,
    build,
    multiple_of,
    one_of,
    register,
)
from zoo.api.layers import (
    AttentionLayers,
    HybridLayout,
    MambaLayout,
    S4DLayout,
    SSMStack,
    TargetEmbedding,
    padding_first,
    places_attention,
    reverse_padded,
)


class Prefix(Choice):
    """How a state-space decoder reads the encoder memory into its state before the target."""

    forward = "forward"  # in the source's order
    reversed = "reversed"  # last word first: the source's beginning is read nearest the target's
    none = "none"  # not at all: the source only through cross-attention layers


@dataclass
class SSMDecoderLayout(HybridLayout):
    """The fields both state-space decoders add to their blocks' layout."""

    d_model: int | None = None  # width of the residual stream; null: the encoder's output width
    tie_embeddings: bool = True  # the output projection shares the target embedding matrix
    # the encoder memory as a prefix read into the state: forward | reversed | none (only through cross-attention)
    prefix: Prefix = Prefix.forward

    def __post_init__(self) -> None:
        super().__post_init__()  # the blocks' layout's checks
        self.check_hybrid(self.layers)
        one_of(self, "prefix", Prefix)
        if self.attends and self.d_model is not None:
            multiple_of(self, "d_model", "heads", "choose attention heads that divide d_model")
        if self.prefix == Prefix.none and not (self.cross_every or self.cross_at):
            raise ConfigError(
                "prefix=none with no cross-attention layer reads nothing of the source; "
                "set cross_every=1 (an encoder-decoder) or prefix=forward (decoder-only)"
            )


class SSMDecoder(Decoder):
    """Shared code of the ``s4d`` and ``mamba`` decoders.

    The prefix: the memory (B, S, memory_dim) through a linear map to d_model, with each row's padding moved
    before its real steps (zoo.api.layers.padding_first). Every block zeroes its layer's input at padded steps
    (and a Mamba block's step Δ is 0 there, which leaves its state unchanged), so the state reaches the first
    real step still zero: padded memory positions never touch it, however many there are. Then the target:
    embeddings scaled by sqrt(d_model) and initialised N(0, 1/d_model), tied to the output projection with
    ``tie_embeddings``; an absolute posenc is added to them (at offset t while stepping). A relative posenc is
    refused: the attention layers, where there are any, read positions from the blocks around them, as Jamba's
    do. ``d_model`` defaults to ``memory_dim``; ``state_dim`` is unused. The run's scorers are used only by the
    attention layers: ``scorer`` in cross-attention, ``self_scorer`` (default ``scorer``) in self-attention, each
    in the key/value layout of ``kv_heads`` and ``kv_latent_dim``.

    ``forward(y_in (B, T), enc) -> DecoderOutput(logits (B, T, V), attention=None)``: the stack over prefix and
    target in its parallel form. ``init_cache(enc)`` runs the same stack over the prefix alone and keeps each
    block's state after it, with the attention layers' caches (the prefix's self-attention keys and values, the
    projected memory); ``step(y_t (B,), enc, cache, t) -> (logits (B, V), cache, cross weights (B, S) or None)``
    advances them by one token. Without attention layers the cache never grows, and a step costs the same
    whatever the source and output lengths; cross-attention costs O(S) a step and self-attention O(S + t).
    """

    uses_scorer = False  # only a hybrid's attention layers score with the run's scorers (scores_with)
    uses_self_scorer = True

    @classmethod
    def scores_with(cls, cfg: Mapping[str, Any]) -> bool:
        return places_attention(cfg)

    def __init__(
        self,
        cfg: Any,
        vocab_size: int,
        memory_dim: int,
        state_dim: int = 0,
        scorer: Any = "scaled_dot",
        posenc: Any = "sinusoidal",
        self_scorer: Any = None,
    ) -> None:
        super().__init__()
        posenc = {"name": posenc} if isinstance(posenc, str) else posenc
        cfg = dataclasses.replace(cfg, d_model=cfg.d_model or memory_dim)  # checked again with the width
        d = cfg.d_model
        self.posenc = build("posenc", posenc, dim=d, heads=1)
        if self.posenc.relative:
            raise ValueError(
                f"posenc '{posenc['name']}' acts inside attention scores, which a state-space decoder's blocks do "
                "not form; use posenc=none (the recurrence knows the order), sinusoidal or learned"
            )
        self.prefix = cfg.prefix
        self.memory_proj = nn.Linear(memory_dim, d) if cfg.prefix != Prefix.none else None
        self.target = TargetEmbedding(vocab_size, d, d, tie=cfg.tie_embeddings, scale=True)
        self.dropout = nn.Dropout(cfg.dropout)
        self.stack = SSMStack(cfg)
        scorers = {"cross": scorer, "self": self_scorer or scorer}
        self.attention = AttentionLayers(cfg, cfg.layers, d, cfg.norm, cfg.dropout, scorers, memory_dim)
        self.attends = self.attention.weighs_the_source  # step returns its weights

    def _prefix(self, enc: EncoderOutput) -> tuple[torch.Tensor, torch.Tensor]:
        """The memory as the stack's first steps: (B, S, d_model) and its mask (B, S), padding first; (B, 0, ...)
        without a prefix."""
        if self.memory_proj is None:
            batch = enc.memory.shape[0]
            return enc.memory.new_zeros(batch, 0, self.target.embedding.embedding_dim), enc.mask[:, :0]
        memory = self.dropout(self.memory_proj(enc.memory))
        if self.prefix == Prefix.reversed:
            memory = reverse_padded(memory, enc.mask)
        return padding_first(memory, enc.mask)

    def _embed(self, y: torch.Tensor, offset: int) -> torch.Tensor:
        """Token ids (B, T) at positions offset.. -> stack input (B, T, d_model)."""
        return self.dropout(self.posenc(self.target.embed(y), offset))

    def _run(self, x: torch.Tensor, mask: torch.Tensor, enc: EncoderOutput, caches: list | None = None):
        """The blocks and their attention layers over x (B, L, d_model) -> (x before the final norm, each block's
        state after the last step when ``caches`` (filled in place) is given, else None)."""
        states = []
        for i, block in enumerate(self.stack.blocks):
            x, state = block(x, mask, return_state=caches is not None)
            states.append(state)
            cache = None if caches is None else caches[i]
            x, _ = self.attention.run(i, x, enc.memory, enc.mask, self_mask=mask, cache=cache)
        return x, (states if caches is not None else None)

    def forward(self, y_in: torch.Tensor, enc: EncoderOutput) -> DecoderOutput:
        prefix, mask = self._prefix(enc)
        x = torch.cat([prefix, self._embed(y_in, 0)], dim=1)
        mask = torch.cat([mask, mask.new_ones(y_in.shape)], dim=1)
        h, _ = self._run(x, mask, enc)
        return DecoderOutput(self.target.logits(self.stack.final_norm(h)[:, prefix.shape[1] :]))

    def init_cache(self, enc: EncoderOutput) -> dict:
        """Every block's state after the prefix (S4D's (B, d_model, d_state) complex, Mamba's convolution window
        (B, E, d_conv - 1) and SSM state (B, E, d_state)), the attention layers' caches, and with self-attention
        the mask (B, P) of the P positions it has cached (None without: the state keeps its one size)."""
        prefix, mask = self._prefix(enc)
        caches = self.attention.init_caches(enc.memory)
        if prefix.shape[1]:
            _, states = self._run(prefix, mask, enc, caches)
        else:
            states = self.stack.initial_states(prefix.shape[0], prefix)
        return {"layers": states, "attention": caches, "mask": mask if self.attention.attends_to_itself else None}

    def step(self, y_t: torch.Tensor, enc: EncoderOutput, cache: dict, t: int):
        x = self._embed(y_t[:, None], t)
        mask, offset = cache["mask"], 0
        if mask is not None:  # what self-attention sees: the cached positions and this one
            offset = mask.shape[1]
            mask = torch.cat([mask, mask.new_ones(y_t.shape[0], 1)], dim=1)
        states, caches, weights = [], [], None
        for i, (block, state, old) in enumerate(zip(self.stack.blocks, cache["layers"], cache["attention"])):
            h, state = block.step(x[:, 0], state)
            x, layer_cache, w = self.attention.step(
                i, h[:, None], enc.memory, enc.mask, old, self_mask=mask, q_offset=offset, need_cross=self.attends
            )
            weights = w if w is not None else weights
            states.append(state)
            caches.append(layer_cache)
        logits = self.target.logits(self.stack.final_norm(x))[:, 0]
        return logits, {"layers": states, "attention": caches, "mask": mask}, weights


@register("decoder", "s4d")
class S4DDecoder(SSMDecoder):
    """S4D decoder: diagonal state-space layers (Gu et al., 2022); decoder-only over the source as a prefix by
    default, or with cross- and self-attention layers among its blocks.

    Teacher forcing runs each block's SSM as a causal convolution (FFT) over prefix and target; generation, as
    its recurrence.
    """

    @dataclass
    class Config(SSMDecoderLayout, S4DLayout):
        pass


@register("decoder", "mamba")
class MambaDecoder(SSMDecoder):
    """Mamba decoder: selective state-space blocks (Gu & Dao, 2023); decoder-only over the source as a prefix by
    default, or with cross- and self-attention layers among its blocks (Pitorro et al.'s Mamba-MHA).

    Teacher forcing runs each block's selective SSM as a parallel scan over prefix and target; generation, one
    step of its recurrence (the convolution window and the SSM state) per token.
    """

    @dataclass
    class Config(SSMDecoderLayout, MambaLayout):
        pass
