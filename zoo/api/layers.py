"""The network parts plugins share, one implementation each, so families differ only where they should.

:func:`attend` (the masked softmax every attention uses); the Transformer block parts
(:class:`TransformerLayout`, :func:`layout_attention`, :class:`FeedForward`, :class:`Residual`,
:func:`final_norm`); :class:`TargetEmbedding`; :class:`GridProjection` and :func:`flatten_grid` for image
grids; the echo state network's :class:`Reservoir` (with its :data:`ACTIVATIONS` and :func:`reverse_padded`);
linear attention and its decayed forms (:class:`LinearAttention`, :class:`LinearCrossAttention`, the block
layout :class:`LinearLayout` with its :class:`Gate` and :class:`FeatureMap`).
"""

from zoo.nn.attention import attend
from zoo.nn.grid import GridProjection, flatten_grid
from zoo.nn.layers import TargetEmbedding
from zoo.nn.linear_attention import FeatureMap, Gate, LinearAttention, LinearCrossAttention, LinearLayout
from zoo.nn.transformer import FeedForward, Residual, TransformerLayout, final_norm, layout_attention
from zoo.reservoir import ACTIVATIONS, Reservoir, reverse_padded

__all__ = [
    "attend", "TransformerLayout", "layout_attention", "FeedForward", "Residual", "final_norm", "TargetEmbedding",
    "GridProjection", "flatten_grid", "Reservoir", "ACTIVATIONS", "reverse_padded",
    "LinearAttention", "LinearCrossAttention", "LinearLayout", "Gate", "FeatureMap",
]  # fmt: skip
