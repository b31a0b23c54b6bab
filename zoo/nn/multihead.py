"""Multi-head attention over any registered scorer (Vaswani et al., 2017).

One module serves encoder self-attention, causal decoder self-attention and
cross-attention over an encoder memory. Per head it projects queries, keys and
values to ``head_dim = d_model / heads``, scores them with a scorer plugin
(``scaled_dot``, ``additive``, ``general``, ...), normalises with
:func:`zoo.nn.attention.attend` and mixes the heads with an output projection.

With the ``scaled_dot`` scorer and no attention weights requested the same
computation runs through ``torch.nn.functional.scaled_dot_product_attention``
(a fused kernel); masks and biases mean exactly the same on both paths.
"""
from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from zoo.nn.attention import attend, attention_mask
from zoo.contracts import PositionalEncoding
from zoo.registry import build

#: The scorer whose formula the fused kernel computes: q . k / sqrt(head_dim).
FUSED_SCORER = "scaled_dot"


class MultiHeadAttention(nn.Module):
    """Multi-head attention: learned Q/K/V projections, one scorer per layer with per-head parameters.

    Args:
        d_model: width of queries and of the output; split into ``heads`` heads.
        heads: number of heads; must divide ``d_model``.
        scorer: attention scorer config (mapping with ``name``, or just the name),
            built once with ``query_dim = key_dim = head_dim`` and ``heads``.
        kdim: width of the memory that keys and values are computed from
            (cross-attention over an encoder of another width); default ``d_model``.
        dropout: dropout on the attention weights while training.

    ``forward(query (B, T, d_model), memory (B, S, kdim) or None, ...) -> (out (B, T, d_model), weights)``
    where ``weights`` is (B, H, T, S) when ``need_weights`` and None otherwise.
    """

    def __init__(
        self,
        d_model: int,
        heads: int,
        scorer: Any = FUSED_SCORER,
        *,
        kdim: int | None = None,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if heads < 1 or d_model % heads != 0:
            raise ValueError(
                f"d_model={d_model} is not divisible by heads={heads}; choose heads that divide d_model "
                f"(e.g. {', '.join(str(h) for h in (1, 2, 4, 8) if d_model % h == 0)})"
            )
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"attention dropout must be in [0, 1), got {dropout}")
        kdim = kdim or d_model
        self.d_model, self.heads, self.head_dim = d_model, heads, d_model // heads
        self.dropout = dropout
        self.q_proj = nn.Linear(d_model, d_model)
        self.kv_proj = nn.Linear(kdim, 2 * d_model)  # keys and values in one matrix product
        self.out_proj = nn.Linear(d_model, d_model)
        for proj in (self.q_proj, self.kv_proj, self.out_proj):
            nn.init.xavier_uniform_(proj.weight)  # Glorot & Bengio (2010), as in torch.nn.MultiheadAttention
            nn.init.zeros_(proj.bias)
        scorer_cfg = {"name": scorer} if isinstance(scorer, str) else scorer
        self.scorer = build("attention", scorer_cfg, query_dim=self.head_dim, key_dim=self.head_dim, heads=heads)
        self.fused = scorer_cfg["name"] == FUSED_SCORER

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, d_model) -> (B, H, T, head_dim), a view."""
        return x.unflatten(-1, (self.heads, self.head_dim)).transpose(1, 2)

    def _keys_values(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, S, kdim) -> keys and values, each (B, H, S, head_dim)."""
        k, v = self.kv_proj(x).chunk(2, dim=-1)
        return self._split(k), self._split(v)

    def project_memory(self, memory: torch.Tensor) -> dict[str, torch.Tensor]:
        """Cross-attention keys/values of an encoder memory (B, S, kdim), computed once per sentence.

        Returns ``{"k": (B, H, S, head_dim), "v": (B, H, S, head_dim)}``, the cache
        :meth:`forward` reuses on every decoding step.
        """
        k, v = self._keys_values(memory)
        return {"k": k, "v": v}

    def forward(
        self,
        query: torch.Tensor,
        memory: torch.Tensor | None = None,
        key_mask: torch.Tensor | None = None,
        *,
        causal: bool = False,
        posenc: PositionalEncoding | None = None,
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
                first step, then ``{"k", "v"}`` (B, H, steps, head_dim) to which each step's
                keys/values are appended. Cross-attention: :meth:`project_memory`'s dict,
                used instead of projecting ``memory`` again (an empty dict is filled on first use).
            need_weights: also return the (B, H, T, S) attention weights (explicit path).
        """
        batch, length, _ = query.shape
        q = self._split(self.q_proj(query))
        if memory is None:  # self-attention
            k, v = self._keys_values(query)
            if posenc is not None:
                q, k = posenc.rotate(q, k, q_offset=q_offset, k_offset=q_offset)
            if cache is not None:
                cached = cache["k"].shape[2] if "k" in cache else 0
                if cached != q_offset:
                    raise ValueError(f"self-attention cache holds {cached} steps but q_offset={q_offset}; step t must follow t-1")
                if cached:
                    k, v = torch.cat([cache["k"], k], dim=2), torch.cat([cache["v"], v], dim=2)
                cache["k"], cache["v"] = k, v
        else:
            if posenc is not None:
                raise ValueError("positional encodings act only in self-attention; pass posenc=None for cross-attention")
            if cache is not None and "k" in cache:
                k, v = cache["k"], cache["v"]
            else:
                k, v = self._keys_values(memory)
                if cache is not None:
                    cache.update(k=k, v=v)
        keys = k.shape[2]
        bias = posenc.bias(length, keys, q_offset=q_offset, causal=causal) if posenc is not None else None
        # With q_offset >= keys - 1 (one decoding step) every query sees every key: no causal mask needed.
        masked_causal = causal and q_offset < keys - 1

        if self.fused and not need_weights:
            context, weights = self._fused(q, k, v, key_mask, masked_causal, bias, q_offset), None
        else:
            scores = self.scorer(q, k)
            context, weights = attend(
                scores, v, key_mask, causal=masked_causal, bias=bias, dropout=self.dropout,
                training=self.training, q_offset=q_offset,
            )
        out = self.out_proj(context.transpose(1, 2).reshape(batch, length, self.d_model))
        return out, weights if need_weights else None

    def _fused(self, q, k, v, key_mask, causal, bias, q_offset) -> torch.Tensor:
        """softmax(q k^T / sqrt(d) + bias, masked) v through the fused kernel -> (B, H, T, d)."""
        length, keys = q.shape[2], k.shape[2]
        dropout = self.dropout if self.training else 0.0
        if causal and key_mask is None and bias is None and q_offset == 0 and length == keys:
            return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout, is_causal=True)
        mask = attention_mask(key_mask, length, keys, causal, q_offset, q.device)  # True = may attend
        if bias is not None:
            bias = bias.to(q.dtype)
            mask = bias if mask is None else bias.masked_fill(~mask, float("-inf"))
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout)
