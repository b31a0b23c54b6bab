"""Multi-head attention over any registered scorer (Vaswani et al., 2017), in the layouts compared for their KV cache.

One module serves encoder self-attention, causal decoder self-attention and
cross-attention over an encoder memory. Per head it projects queries, keys and
values to ``head_dim = d_model / heads``, scores them with a scorer plugin
(``scaled_dot``, ``additive``, ``general``, ...), normalises with
:func:`zoo.nn.attention.attend` and mixes the heads with an output projection.

Layouts of keys and values (what a decoder caches per generated token):

* multi-head (default): ``heads`` key/value heads;
* grouped-query (Ainslie et al., 2023) and multi-query (Shazeer, 2019):
  ``kv_heads`` key/value heads, each shared by ``heads / kv_heads`` query heads
  (``kv_heads=1``: one for all);
* multi-head latent attention (DeepSeek-AI, 2024, "DeepSeek-V2"): keys and values
  are decompressed per head from a ``kv_latent_dim``-wide latent, which is what the
  cache holds;
* parameter-free (``projections=False``): the vectors themselves, split into
  heads, are queries, keys and values, and the heads are concatenated back: no
  W_q, W_k, W_v, W_o.

With a scorer that declares ``fused_sdpa`` (its score is q . k / sqrt(head_dim),
as ``scaled_dot``'s) and no attention weights requested, the same computation runs
through ``torch.nn.functional.scaled_dot_product_attention`` (a fused kernel); masks
and biases mean exactly the same on both paths.

Cross-attention's keys are fixed for a whole sentence, so the scorer's key-side
work (:meth:`zoo.contracts.Attention.prepare_keys`, e.g. additive attention's W_k k)
is done once, when the memory is projected, and every decoding step scores with
:meth:`~zoo.contracts.Attention.score_prepared`.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from zoo.contracts import Attention, PosEnc
from zoo.nn.attention import attend, attention_mask
from zoo.registry import build


class MultiHeadAttention(nn.Module):
    """Multi-head attention: learned Q/K/V projections, one scorer per layer with per-head parameters.

    Args:
        d_model: width of queries and of the output; split into ``heads`` heads.
        heads: number of (query) heads; must divide ``d_model``.
        scorer: attention scorer config (mapping with ``name``, or just the name),
            built once with ``query_dim = key_dim = head_dim`` and ``heads``.
        kdim: width of the memory that keys and values are computed from
            (cross-attention over an encoder of another width); default ``d_model``.
        dropout: dropout on the attention weights while training.
        kv_heads: key/value heads, each shared by ``heads / kv_heads`` query heads
            (grouped-query; 1: multi-query); must divide ``heads``; default ``heads``.
        kv_latent_dim: width of the latent that keys and values are decompressed from
            (multi-head latent attention); the cache holds it instead of keys and values.
        projections: False for parameter-free attention (self-attention only, needs the
            default ``kv_heads``, no latent and ``kdim = d_model``).

    ``forward(query (B, T, d_model), memory (B, S, kdim) or None, ...) -> (out (B, T, d_model), weights)``
    where ``weights`` is (B, H, T, S) when ``need_weights`` and None otherwise.

    Relative positions with a latent: RoPE rotates the keys after decompression, at
    every use, rather than through the paper's decoupled rotary keys (a simplification;
    see docs/transformer.md). Only the latent is cached, but each call decompresses
    every cached position again, and W_k cannot be absorbed into W_q.

    Cross-attention with a scorer that prepares its keys (``prepares_keys``: one that
    overrides :meth:`~zoo.contracts.Attention.prepare_keys`, e.g. ``additive``) caches the
    prepared keys instead of the keys; with a latent the cache stays the latent, and the
    keys are decompressed and prepared at every use.
    """

    def __init__(
        self,
        d_model: int,
        heads: int,
        scorer: Any,
        *,
        kdim: int | None = None,
        dropout: float = 0.0,
        kv_heads: int | None = None,
        kv_latent_dim: int | None = None,
        projections: bool = True,
    ) -> None:
        super().__init__()
        kv_heads = kv_heads or heads
        kdim = kdim or d_model
        _check_layout(d_model, heads, kdim, dropout, kv_heads, kv_latent_dim, projections)
        self.d_model, self.heads, self.head_dim = d_model, heads, d_model // heads
        self.kv_heads, self.group = kv_heads, heads // kv_heads
        self.dropout = dropout
        self.compress = None  # MLA: memory (B, S, kdim) -> latent (B, S, kv_latent_dim)
        self.kv_proj = None  # None: parameter-free, keys and values are the input itself
        if projections:
            self.q_proj = nn.Linear(d_model, d_model)
            # Keys and values in one matrix product, from the input or from the latent.
            self.kv_proj = nn.Linear(kv_latent_dim or kdim, 2 * kv_heads * self.head_dim)
            self.out_proj = nn.Linear(d_model, d_model)
            for proj in (self.q_proj, self.kv_proj, self.out_proj):
                nn.init.xavier_uniform_(proj.weight)  # Glorot & Bengio (2010), as in torch.nn.MultiheadAttention
                nn.init.zeros_(proj.bias)
            if kv_latent_dim:
                # Down-projection without bias, then RMSNorm on the latent, as DeepSeek-V2 does.
                down = nn.Linear(kdim, kv_latent_dim, bias=False)
                nn.init.xavier_uniform_(down.weight)
                self.compress = nn.Sequential(down, nn.RMSNorm(kv_latent_dim, eps=1e-6))
        else:
            self.q_proj = self.out_proj = nn.Identity()
        scorer_cfg = {"name": scorer} if isinstance(scorer, str) else scorer
        self.scorer = build("attention", scorer_cfg, query_dim=self.head_dim, key_dim=self.head_dim, heads=heads)
        self.fused = self.scorer.fused_sdpa
        #: Whether the scorer has key-side work to do once per memory rather than at every step.
        self.prepares_keys = type(self.scorer).prepare_keys is not Attention.prepare_keys

    def _split(self, x: torch.Tensor, heads: int) -> torch.Tensor:
        """(B, T, heads * head_dim) -> (B, heads, T, head_dim), a view."""
        return x.unflatten(-1, (heads, self.head_dim)).transpose(1, 2)

    def _keys_values(self, source: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Input (B, S, kdim), or the latent (B, S, kv_latent_dim) -> keys and values, each
        (B, kv_heads, S, head_dim)."""
        if self.kv_proj is None:
            heads = self._split(source, self.kv_heads)
            return heads, heads
        k, v = self.kv_proj(source).chunk(2, dim=-1)
        return self._split(k, self.kv_heads), self._split(v, self.kv_heads)

    def project_memory(self, memory: torch.Tensor) -> dict[str, torch.Tensor]:
        """Cross-attention's cache of an encoder memory (B, S, kdim), computed once per sentence.

        Returns the dict :meth:`forward` reuses on every decoding step: ``{"k", "v"}``
        (B, kv_heads, S, head_dim); ``{"prepared", "v"}`` when the scorer ``prepares_keys``,
        where ``prepared`` is its prepared keys (B, heads, S, ...), one per query head because
        the scorer's parameters are per head; or ``{"latent"}`` (B, S, kv_latent_dim) with a latent.
        """
        if self.compress is not None:
            return {"latent": self.compress(memory)}
        k, v = self._keys_values(memory)
        if self.prepares_keys:
            return {"prepared": self.scorer.prepare_keys(self._shared(k)), "v": v}
        return {"k": k, "v": v}

    def _cached_keys_values(self, stored: dict[str, torch.Tensor]) -> tuple[torch.Tensor | None, torch.Tensor]:
        """A :meth:`project_memory` dict -> keys (None when it holds prepared keys instead) and values,
        (B, kv_heads, S, head_dim), decompressed if need be."""
        return self._keys_values(stored["latent"]) if "latent" in stored else (stored.get("k"), stored["v"])

    def forward(
        self,
        query: torch.Tensor,
        memory: torch.Tensor | None = None,
        key_mask: torch.Tensor | None = None,
        *,
        causal: bool = False,
        posenc: PosEnc | None = None,
        q_offset: int = 0,
        cache: dict[str, torch.Tensor] | None = None,
        need_weights: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attend from ``query`` to itself (``memory=None``) or to ``memory``.

        Args:
            query: (B, T, d_model).
            memory: (B, S, kdim) that keys and values are computed from (cross-attention),
                or None for self-attention (keys and values come from ``query``).
            key_mask: (B, S) bool, True where a key is real.
            causal: query ``i`` (at position ``q_offset + i``) sees only keys at positions ``<= q_offset + i``.
            posenc: a relative positional encoding (self-attention only): rotates q and k
                (RoPE) and/or adds an (H, T, S) score bias (ALiBi, T5).
            q_offset: position of ``query[:, 0]``; with a cache, the number of steps already cached.
            cache: incremental decoding state, updated in place. Self-attention: ``{}`` at the
                first step, then ``{"k", "v"}`` (B, kv_heads, steps, head_dim), or ``{"latent"}``
                (B, steps, kv_latent_dim), to which each step's entries are appended.
                Cross-attention: :meth:`project_memory`'s dict, used instead of projecting
                ``memory`` (and preparing its keys) again (an empty dict is filled on first use).
            need_weights: also return the (B, H, T, S) attention weights (explicit path).
        """
        batch, length, _ = query.shape
        q = self._split(self.q_proj(query), self.heads)
        prepared = None
        if memory is None:
            q, k, v = self._self_keys_values(query, q, posenc, q_offset, cache)
        else:
            if posenc is not None:
                raise ValueError(
                    "positional encodings act only in self-attention; pass posenc=None for cross-attention"
                )
            stored = self._memory_cache(memory, cache)
            k, v = self._cached_keys_values(stored)
            prepared = stored.get("prepared")
        keys = v.shape[2]
        bias = posenc.bias(length, keys, q_offset=q_offset, causal=causal) if posenc is not None else None
        # With q_offset >= keys - 1 (one decoding step) every query sees every key: no causal mask needed.
        masked_causal = causal and q_offset < keys - 1

        if self.fused and not need_weights:
            context, weights = self._fused(q, k, v, key_mask, masked_causal, bias, q_offset), None
        else:
            scores = self._scores(q, k, prepared)
            context, weights = attend(
                scores,
                self._shared(v),
                key_mask,
                causal=masked_causal,
                bias=bias,
                dropout=self.dropout,
                training=self.training,
                q_offset=q_offset,
            )
        out = self.out_proj(context.transpose(1, 2).reshape(batch, length, self.d_model))
        return out, weights if need_weights else None

    def _scores(self, q: torch.Tensor, k: torch.Tensor | None, prepared: torch.Tensor | None) -> torch.Tensor:
        """Scores (B, H, T, S) of q (B, H, T, d): from the keys prepared once per memory when there are
        such (cross-attention), else from the keys k (B, kv_heads, S, d), shared out to the query heads."""
        if prepared is not None:
            return self.scorer.score_prepared(q, prepared)
        return self.scorer(q, self._shared(k))

    def _memory_cache(self, memory: torch.Tensor, cache: dict[str, torch.Tensor] | None) -> dict[str, torch.Tensor]:
        """The projected memory: ``cache`` when it holds it, else projected now (and stored in an empty ``cache``)."""
        if cache:
            return cache
        stored = self.project_memory(memory)
        if cache is not None:
            cache.update(stored)
        return stored

    def _self_keys_values(self, x, q, posenc, q_offset, cache):
        """Self-attention's q (B, H, T, d), k and v (B, kv_heads, S, d), extending the cache.

        Keys are cached rotated; a latent is cached as it is and its keys are rotated after
        decompression, at their positions 0.. (the whole cached sequence at every call).
        """
        if self.compress is None:
            k, v = self._keys_values(x)
            if posenc is not None:
                q, k = posenc.rotate(q, k, q_offset=q_offset, k_offset=q_offset)
            if cache is not None:
                k, v = _append(cache, q_offset, k=k, v=v)
            return q, k, v
        latent = self.compress(x)
        if cache is not None:
            (latent,) = _append(cache, q_offset, latent=latent)
        k, v = self._keys_values(latent)
        if posenc is not None:
            q, k = posenc.rotate(q, k, q_offset=q_offset, k_offset=0)
        return q, k, v

    def _shared(self, x: torch.Tensor) -> torch.Tensor:
        """(B, kv_heads, S, d) -> (B, H, S, d): query head h reads key/value head h // group (a copy)."""
        return x if self.group == 1 else x.repeat_interleave(self.group, dim=1)

    def _fused(self, q, k, v, key_mask, causal, bias, q_offset) -> torch.Tensor:
        """softmax(q k^T / sqrt(d) + bias, masked) v through the fused kernel -> (B, H, T, d).

        Grouped queries read their shared keys/values in place: the ``group`` query heads of
        one key/value head become ``group * T`` query rows of it, (B, kv_heads, group * T, d).
        """
        batch, heads, length, dim = q.shape
        keys = k.shape[2]
        dropout = self.dropout if self.training else 0.0
        if self.group == 1 and causal and key_mask is None and bias is None and q_offset == 0 and length == keys:
            return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout, is_causal=True)
        mask = attention_mask(key_mask, length, keys, causal, q_offset, q.device)  # True = may attend
        if bias is not None:
            bias = bias.to(q.dtype)
            mask = bias if mask is None else bias.masked_fill(~mask, float("-inf"))
        if self.group > 1:
            q = q.reshape(batch, self.kv_heads, self.group * length, dim)
            mask = None if mask is None else self._fold(mask)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout)
        return out.reshape(batch, heads, length, dim)

    def _fold(self, mask: torch.Tensor) -> torch.Tensor:
        """A mask or bias (b, 1 or H, T or 1, S) (or (H, T, S)) -> rows for folded queries (b, 1 or kv_heads, group *
        T, S)."""
        mask = mask if mask.dim() == 4 else mask[None]
        batch, heads, rows, keys = mask.shape
        if heads == 1:  # the same for every head: once per query head of a group (rows == 1 broadcasts as it is)
            return mask if rows == 1 else mask.repeat(1, 1, self.group, 1)
        return mask.reshape(batch, self.kv_heads, self.group * rows, keys)


def _append(cache: dict[str, torch.Tensor], q_offset: int, **new: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Append each new tensor to its cached one along time (axis -2) and store the results; returns them."""
    cached = next(iter(cache.values())).shape[-2] if cache else 0
    if cached != q_offset:
        raise ValueError(f"self-attention cache holds {cached} steps but q_offset={q_offset}; step t must follow t-1")
    if cached:
        new = {name: torch.cat([cache[name], tensor], dim=-2) for name, tensor in new.items()}
    cache.update(new)
    return tuple(new.values())


def _check_layout(d_model, heads, kdim, dropout, kv_heads, kv_latent_dim, projections) -> None:
    """A ValueError naming the fields when the sizes cannot work together."""
    if heads < 1 or d_model % heads != 0:
        raise ValueError(
            f"d_model={d_model} is not divisible by heads={heads}; choose heads that divide d_model "
            f"(e.g. {', '.join(str(h) for h in (1, 2, 4, 8) if d_model % h == 0)})"
        )
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"attention dropout must be in [0, 1), got {dropout}")
    if kv_heads < 1 or heads % kv_heads != 0:
        raise ValueError(
            f"kv_heads={kv_heads} must divide heads={heads}: each key/value head serves a whole group of query heads"
        )
    if kv_latent_dim is not None and kv_latent_dim < 1:
        raise ValueError(f"kv_latent_dim={kv_latent_dim} must be >= 1")
    if not projections and (kv_heads != heads or kv_latent_dim or kdim != d_model):
        raise ValueError(
            "parameter-free attention compares the input's own vectors, so it needs kv_heads = heads, "
            f"no kv_latent_dim and keys as wide as queries; got kv_heads={kv_heads}, heads={heads}, "
            f"kv_latent_dim={kv_latent_dim}, kdim={kdim}, d_model={d_model}"
        )
