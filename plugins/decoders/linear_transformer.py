"""The ``linear_transformer`` decoder: Transformer blocks whose causal self-attention and cross-attention are linear
(Katharopoulos et al., 2020), the self-attention optionally decayed (retention, Sun et al., 2023; gated linear
attention, Yang et al., 2024); it generates from a state of constant size."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from zoo.api import Decoder, DecoderOutput, EncoderOutput, build, register
from zoo.api.layers import (
    AttentionLayers,
    FeedForward,
    HybridLayout,
    LinearAttention,
    LinearCrossAttention,
    LinearLayout,
    Residual,
    TargetEmbedding,
    final_norm,
    places_attention,
)


class DecoderLayer(nn.Module):
    """Causal linear self-attention, linear cross-attention over the memory's summary, feed-forward; each inside
    a :class:`Residual`."""

    def __init__(self, cfg: LinearLayout, memory_dim: int) -> None:
        super().__init__()
        self.self_attn = LinearAttention(cfg.d_model, cfg.heads, cfg.feature_map, cfg.gate, cfg.chunk_size)
        self.self_residual = Residual(cfg)
        self.cross_attn = LinearCrossAttention(cfg.d_model, cfg.heads, cfg.feature_map, kdim=memory_dim)
        self.cross_residual = Residual(cfg)
        self.ff = FeedForward(cfg)
        self.ff_residual = Residual(cfg)

    def forward(self, x: torch.Tensor, summary: torch.Tensor, state: torch.Tensor | None = None):
        """Teacher forcing: x (B, T, D), state None -> (x, None). One step: x (B, 1, D) and the self-attention state
        (B, H, F, d_head + 1) -> (x, the new state). ``summary`` is the cross-attention's summary of the memory."""
        h = self.self_residual.open(x)
        if state is None:
            out = self.self_attn(h, causal=True)
        else:
            out, state = self.self_attn.step(h[:, 0], state)
            out = out[:, None]
        x = self.self_residual.close(x, out)
        x = self.cross_residual.close(x, self.cross_attn(self.cross_residual.open(x), summary))
        return self.ff_residual.close(x, self.ff(self.ff_residual.open(x))), state


@register("decoder", "linear_transformer")
class LinearTransformerDecoder(Decoder):
    """Transformer decoder with linear attention: each generated token costs the same, whatever the source and
    output lengths.

    Causal self-attention is the recurrence S_t = a_t * S_{t-1} + phi(k_t) v_t^T (with the normaliser z_t
    alongside): teacher forcing computes it in parallel, chunkwise, and ``step`` advances it by one token.
    Cross-attention is linear too: the memory's keys and values are summarised once per sentence into
    sum_j phi(k_j) v_j^T and sum_j phi(k_j) over its real positions (``init_cache``), and each target token reads
    that summary. So the cache is, per layer, a self-attention state and a memory summary, both (B, H, F,
    d_head + 1) with F the feature width: it does not grow while generating, and a step costs O(d_model^2) per
    layer, not O(t + S) as a softmax decoder's does over its key/value cache and the memory.

    ``gate`` decays only the self-attention (none | retention | gla); the memory is not a sequence the target
    moves along, so cross-attention has no decay. A hybrid (zoo.api.layers.HybridLayout: ``cross_every``,
    ``cross_at``, ``self_attention_every``) adds softmax attention layers after some blocks, scored with the
    run's scorers in the key/value layout of ``kv_heads``/``kv_latent_dim``; their caches grow as a
    Transformer's do. Target embeddings are scaled by sqrt(d_model) and initialised N(0, 1/d_model) and, with
    ``tie_embeddings``, shared with the output projection (as the ``transformer`` decoder's). An absolute posenc
    is added to the embeddings (at offset t while stepping); a relative one acts inside softmax scores, which its
    linear layers do not form, and is refused. The run's attention scorers are used only by a hybrid's softmax
    layers: phi(q) . phi(k) is the linear layers' score. ``d_model`` defaults to ``memory_dim``; ``state_dim``
    is unused.

    ``forward(y_in (B, T), enc) -> DecoderOutput(logits (B, T, V), attention=None)``: no attention weights are
    formed. ``step(y_t (B,), enc, cache, t) -> (logits (B, V), cache, a hybrid's cross weights (B, S) or None)``.
    """

    uses_scorer = False  # only a hybrid's softmax layers score with the run's scorers (scores_with)
    uses_self_scorer = True

    @classmethod
    def scores_with(cls, cfg: Any) -> bool:
        return places_attention(cfg)

    @dataclass
    class Config(HybridLayout, LinearLayout):
        d_model: int | None = None  # width of every block; null: the encoder's output width
        tie_embeddings: bool = True  # the output projection shares the target embedding matrix

        def __post_init__(self) -> None:
            super().__post_init__()
            self.check_hybrid(self.layers)

    def __init__(
        self,
        cfg: Config,
        vocab_size: int,
        memory_dim: int,
        state_dim: int = 0,
        scorer: Any = "scaled_dot",
        posenc: Any = "sinusoidal",
        self_scorer: Any = None,
    ) -> None:
        super().__init__()
        posenc = {"name": posenc} if isinstance(posenc, str) else posenc
        cfg = dataclasses.replace(cfg, d_model=cfg.d_model or memory_dim)  # checks heads divide the width
        d = cfg.d_model
        self.posenc = build("posenc", posenc, dim=d, heads=cfg.heads)
        if self.posenc.relative:
            raise ValueError(
                f"posenc '{posenc['name']}' acts inside softmax attention scores, which linear attention does not "
                "form; use posenc=sinusoidal, learned or none (gate=retention or gla decays with distance)"
            )
        self.target = TargetEmbedding(vocab_size, d, d, tie=cfg.tie_embeddings, scale=True)
        self.dropout = nn.Dropout(cfg.dropout)
        self.layers = nn.ModuleList(DecoderLayer(cfg, memory_dim) for _ in range(cfg.layers))
        scorers = {"cross": scorer, "self": self_scorer or scorer}
        self.attention = AttentionLayers(cfg, cfg.layers, d, cfg.norm, cfg.dropout, scorers, memory_dim)
        self.attends = self.attention.weighs_the_source  # step returns its weights
        self.final_norm = final_norm(cfg)

    def _embed(self, y: torch.Tensor, offset: int) -> torch.Tensor:
        """Token ids (B, T) at positions offset.. -> block input (B, T, d_model)."""
        return self.dropout(self.posenc(self.target.embed(y), offset))

    def forward(self, y_in: torch.Tensor, enc: EncoderOutput) -> DecoderOutput:
        x = self._embed(y_in, 0)
        for i, layer in enumerate(self.layers):
            x, _ = layer(x, layer.cross_attn.summarise(enc.memory, enc.mask))
            x, _ = self.attention.run(i, x, enc.memory, enc.mask)
        return DecoderOutput(self.target.logits(self.final_norm(x)))

    def init_cache(self, enc: EncoderOutput) -> dict:
        """Per layer: the empty self-attention state and the memory's summary, made once per sentence, each
        (B, H, F, d_head + 1); a hybrid's attention layers' caches beside them."""
        batch = enc.memory.shape[0]
        return {
            "layers": [
                {
                    "self": layer.self_attn.initial_state(batch, enc.memory),
                    "cross": layer.cross_attn.summarise(enc.memory, enc.mask),
                }
                for layer in self.layers
            ],
            "attention": self.attention.init_caches(enc.memory),
        }

    def step(self, y_t: torch.Tensor, enc: EncoderOutput, cache: dict, t: int):
        x = self._embed(y_t[:, None], t)
        layers, caches, weights = [], [], None
        for i, (layer, old, attention) in enumerate(zip(self.layers, cache["layers"], cache["attention"])):
            x, state = layer(x, old["cross"], old["self"])
            layers.append({"self": state, "cross": old["cross"]})
            x, layer_cache, w = self.attention.step(
                i, x, enc.memory, enc.mask, attention, q_offset=t, need_cross=self.attends
            )
            weights = w if w is not None else weights
            caches.append(layer_cache)
        return self.target.logits(self.final_norm(x))[:, 0], {"layers": layers, "attention": caches}, weights
