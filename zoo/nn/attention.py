"""The one masked softmax / weighted sum every attention in zoo goes through.

RNN attention is the ``H = 1, T = 1`` case of the same function that
multi-head attention calls per head.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def attend(
    scores: torch.Tensor,
    values: torch.Tensor,
    key_mask: torch.Tensor | None = None,
    *,
    causal: bool = False,
    bias: torch.Tensor | None = None,
    dropout: float = 0.0,
    training: bool = False,
    q_offset: int = 0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Normalise scores and mix values.

    Args:
        scores: (B, H, T, S) raw scores from a scorer.
        values: (B, H, S, dv).
        key_mask: (B, S) bool, True where a key is real; padded keys get weight 0.
        causal: query ``i`` (at absolute position ``q_offset + i``) sees keys ``<= q_offset + i``.
        bias: additive score bias broadcastable to (B, H, T, S) (ALiBi, T5 buckets).
    Returns:
        context (B, H, T, dv) and weights (B, H, T, S). A query with no visible key
        gets all-zero weights rather than NaN.
    """
    if bias is not None:
        scores = scores + bias
    allowed = attention_mask(key_mask, scores.shape[-2], scores.shape[-1], causal, q_offset, scores.device)
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    weights = torch.softmax(scores.float(), dim=-1).to(values.dtype)
    if allowed is not None:
        weights = weights.masked_fill(~allowed, 0.0)  # rows with no visible key: NaN -> 0
    mixed = F.dropout(weights, p=dropout, training=training) if dropout > 0 else weights
    return mixed @ values, weights


def attention_mask(
    key_mask: torch.Tensor | None, t: int, s: int, causal: bool, q_offset: int, device: torch.device
) -> torch.Tensor | None:
    """Boolean (B or 1, 1, T, S) mask of allowed query/key pairs, or None when all are allowed."""
    allowed = None
    if key_mask is not None:
        allowed = key_mask[:, None, None, :]
    if causal:
        q_pos = torch.arange(t, device=device)[:, None] + q_offset
        k_pos = torch.arange(s, device=device)[None, :]
        tri = (k_pos <= q_pos)[None, None]
        allowed = tri if allowed is None else allowed & tri
    return allowed
