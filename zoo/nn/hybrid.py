"""Softmax attention layers placed inside a recurrent stack: the hybrids of Jamba (Lieber et al., 2024) and of
Pitorro et al. (WMT 2024, "How Effective are State Space Models for Machine Translation?"), whose Mamba decoder
with cross-attention translated best of all they tried.

A state-space or linear-attention decoder keeps a state of constant size, so everything it knows of the source
has passed through it. A cross-attention layer after some of its blocks lets the target read the encoder memory
again at every word, as an attentional RNN or a Transformer does; a causal self-attention layer lets it look back
at every earlier position exactly. :class:`HybridLayout` says where they go; :class:`AttentionSublayer` is one
such layer, a pre-norm residual around zoo's :class:`~zoo.nn.multihead.MultiHeadAttention`, so any registered
scorer and key/value layout (grouped-query, multi-query, latent) works inside it. While decoding the blocks keep
their recurrent state and the attention layers their key/value caches.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from zoo.config.checks import ConfigError, at_least, in_unit_interval, multiple_of
from zoo.nn.multihead import MultiHeadAttention
from zoo.nn.norms import Norm, make_norm


@dataclass
class HybridLayout:
    """Config fields of the attention layers a recurrent decoder may interleave with its blocks (none by default).

    Blocks are counted from 1: ``cross_every: 2`` puts a cross-attention layer after blocks 2, 4, ...;
    ``cross_at: [4]`` after block 4 only. Within a block's position the self-attention layer comes first, then
    the cross-attention layer, as in a Transformer decoder layer."""

    cross_every: int = 0  # a softmax cross-attention layer over the encoder memory after every k-th block; 0: none
    cross_at: tuple[int, ...] = ()  # or after these blocks (1 = the first), e.g. [2,4]; not with cross_every
    self_attention_every: int = 0  # a causal softmax self-attention layer after every k-th block (Jamba); 0: none
    heads: int = 4  # heads of those attention layers; must divide d_model
    # key/value heads shared by groups of query heads: null = heads | 1: multi-query | else grouped-query
    kv_heads: int | None = None
    kv_latent_dim: int | None = None  # multi-head latent attention: cache this latent instead of keys and values
    attention_dropout: float = 0.0  # on the attention weights

    def check_hybrid(self, layers: int) -> None:
        """Refuse placements that name no block of a ``layers``-block stack or that conflict."""
        for field in ("cross_every", "self_attention_every"):
            at_least(self, field, 0)
        for field in ("heads", "kv_heads", "kv_latent_dim"):
            at_least(self, field, 1)
        multiple_of(self, "heads", "kv_heads", "each key/value head serves a whole group of query heads")
        in_unit_interval(self, "attention_dropout")
        if self.cross_every and self.cross_at:
            raise ConfigError(
                f"cross_every={self.cross_every} and cross_at={list(self.cross_at)} both place cross-attention; "
                "set one of them (cross_at=[] or cross_every=0)"
            )
        outside = [block for block in self.cross_at if not 1 <= block <= layers]
        if outside:
            raise ConfigError(
                f"cross_at={list(self.cross_at)} names blocks {outside}, but the stack has {layers} (1..{layers})"
            )
        for field in ("cross_every", "self_attention_every"):
            if getattr(self, field) > layers:
                raise ConfigError(
                    f"{field}={getattr(self, field)} places no layer in a stack of {layers} blocks; "
                    f"choose 1..{layers} (or 0 for none)"
                )

    def cross_after(self, block: int) -> bool:
        """Whether a cross-attention layer follows block ``block`` (counted from 1)."""
        return block in self.cross_at or (self.cross_every > 0 and block % self.cross_every == 0)

    def self_after(self, block: int) -> bool:
        """Whether a self-attention layer follows block ``block`` (counted from 1)."""
        return self.self_attention_every > 0 and block % self.self_attention_every == 0

    @property
    def attends(self) -> bool:
        """Whether any attention layer is placed, so the run's scorers are used."""
        return places_attention(vars(self))


def places_attention(cfg: Mapping[str, Any]) -> bool:
    """Whether a config section with :class:`HybridLayout`'s fields places any attention layer (what a decoder's
    ``scores_with`` answers from its section)."""
    return bool(cfg.get("cross_every") or cfg.get("cross_at") or cfg.get("self_attention_every"))


class AttentionSublayer(nn.Module):
    """x + dropout(attention(norm(x), ...)): a pre-norm residual around one multi-head attention (Xiong et al.,
    2020), the form of the blocks it sits between."""

    def __init__(
        self, cfg: HybridLayout, d_model: int, norm: Norm, dropout: float, scorer: Any, kdim: int | None = None
    ) -> None:
        super().__init__()
        self.norm = make_norm(norm, d_model)
        self.attention = MultiHeadAttention(
            d_model,
            cfg.heads,
            scorer,
            kdim=kdim,
            dropout=cfg.attention_dropout,
            kv_heads=cfg.kv_heads,
            kv_latent_dim=cfg.kv_latent_dim,
        )
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, memory: torch.Tensor | None = None, **kwargs: Any):
        """x (B, T, D) and, for cross-attention, memory (B, S, kdim) -> (x, weights or None); ``kwargs`` as
        :meth:`MultiHeadAttention.forward`'s (key_mask, causal, q_offset, cache, need_weights)."""
        out, weights = self.attention(self.norm(x), memory, **kwargs)
        return x + self.dropout(out), weights


class AttentionLayers(nn.Module):
    """The attention layers after each block of a ``layers``-block stack, as :class:`HybridLayout` places them.

    ``run(i, x, enc, ...)`` applies those after block i (counted from 0 here, as Python counts the stack): the
    self-attention layer over x itself (causal; ``self_mask`` (B, L) marks its real steps, e.g. a prefix's
    padding), then the cross-attention layer over the memory. ``caches`` (one dict per block, made by
    :meth:`empty_caches` and :meth:`init_caches`) hold the key/value caches while decoding.
    """

    def __init__(
        self, cfg: HybridLayout, layers: int, d_model: int, norm: Norm, dropout: float, scorers: dict, memory_dim: int
    ):
        super().__init__()
        cfg.check_hybrid(layers)

        def sublayer(wanted: bool, scorer: Any, kdim: int | None = None) -> nn.Module:
            """An attention layer where one is placed, else nn.Identity() holding the block's place."""
            return AttentionSublayer(cfg, d_model, norm, dropout, scorer, kdim) if wanted else nn.Identity()

        self.self_layers = nn.ModuleList(sublayer(cfg.self_after(i + 1), scorers["self"]) for i in range(layers))
        self.cross_layers = nn.ModuleList(
            sublayer(cfg.cross_after(i + 1), scorers["cross"], memory_dim) for i in range(layers)
        )

    @staticmethod
    def _placed(layer: nn.Module) -> bool:
        return isinstance(layer, AttentionSublayer)

    @property
    def attends_to_itself(self) -> bool:
        """Whether any self-attention layer is placed: only then must a decoder keep the mask of what it caches."""
        return any(self._placed(layer) for layer in self.self_layers)

    @property
    def cross(self) -> list[AttentionSublayer]:
        """The cross-attention layers, in stack order."""
        return [layer for layer in self.cross_layers if self._placed(layer)]

    @property
    def weighs_the_source(self) -> bool:
        """Whether the last cross-attention layer forms weights over the source that a step can return."""
        return bool(self.cross) and self.cross[-1].attention.scorer.attends

    def init_caches(self, memory: torch.Tensor) -> list[dict]:
        """Per block: an empty self-attention cache and the projected memory, made once per sentence."""
        return [
            {
                "self": {},
                "cross": cross.attention.project_memory(memory) if self._placed(cross) else {},
            }
            for cross in self.cross_layers
        ]

    def run(
        self,
        i: int,
        x: torch.Tensor,
        memory: torch.Tensor,
        memory_mask: torch.Tensor,
        *,
        self_mask: torch.Tensor | None = None,
        q_offset: int = 0,
        cache: dict | None = None,
        need_cross: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The attention layers after block i: x (B, T, D) at positions q_offset.. -> (x, cross weights (B, H, T, S)
        or None). ``cache`` (this block's, updated in place) while stepping; ``self_mask`` covers every position
        the self-attention sees, cached ones included."""
        weights = None
        self_layer, cross_layer = self.self_layers[i], self.cross_layers[i]
        if self._placed(self_layer):
            x, _ = self_layer(
                x,
                key_mask=self_mask,
                causal=True,
                q_offset=q_offset,
                cache=None if cache is None else cache["self"],
            )
        if self._placed(cross_layer):
            x, weights = cross_layer(
                x,
                memory,
                key_mask=memory_mask,
                cache=None if cache is None else cache["cross"],
                need_weights=need_cross,
            )
        return x, weights

    def step(
        self,
        i: int,
        x: torch.Tensor,
        memory: torch.Tensor,
        memory_mask: torch.Tensor,
        cache: dict,
        *,
        self_mask: torch.Tensor | None = None,
        q_offset: int = 0,
        need_cross: bool = False,
    ) -> tuple[torch.Tensor, dict, torch.Tensor | None]:
        """One decoding step through the attention layers after block i, x (B, 1, D) -> (x, block i's new cache,
        cross weights (B, S) averaged over heads, or None). The new cache is a copy, so the caller's stays intact
        (beam search keeps its hypotheses' caches)."""
        fresh = {"self": dict(cache["self"]), "cross": dict(cache["cross"])}
        x, weights = self.run(
            i, x, memory, memory_mask, self_mask=self_mask, q_offset=q_offset, cache=fresh, need_cross=need_cross
        )
        return x, fresh, None if weights is None else weights[:, :, 0].mean(dim=1)
