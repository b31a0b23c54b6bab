"""The network parts plugins share, one implementation each, so families differ only where they should.

:func:`attend` (the masked softmax every attention uses); the Transformer block parts
(:class:`TransformerLayout`, :func:`layout_attention`, :class:`FeedForward`, :class:`Residual`,
:func:`final_norm`); :class:`TargetEmbedding`; :class:`GridProjection` and :func:`flatten_grid` for image
grids; the echo state network's :class:`Reservoir` (with its :data:`ACTIVATIONS` and :func:`reverse_padded`);
linear attention and its decayed forms (:class:`LinearAttention`, :class:`LinearCrossAttention`, the block
layout :class:`LinearLayout` with its :class:`Gate` and :class:`FeatureMap`); state-space layers, S4D and Mamba
(:class:`S4D`, :class:`S4DMixer`, :class:`Mamba`), their residual stack :class:`SSMStack` with its layouts
:class:`S4DLayout` and :class:`MambaLayout`, and :func:`padding_first` (a prefix's padding moved before it);
softmax attention layers placed among a recurrent stack's blocks (:class:`HybridLayout`, :class:`AttentionSublayer`,
:class:`AttentionLayers`, :func:`places_attention`: the hybrids of Jamba and Pitorro et al.).
"""

from zoo.nn.attention import attend
from zoo.nn.grid import GridProjection, flatten_grid
from zoo.nn.hybrid import AttentionLayers, AttentionSublayer, HybridLayout, places_attention
from zoo.nn.layers import TargetEmbedding
from zoo.nn.linear_attention import FeatureMap, Gate, LinearAttention, LinearCrossAttention, LinearLayout
from zoo.nn.ssm import S4D, Mamba, MambaLayout, S4DLayout, S4DMixer, SSMStack, padding_first
from zoo.nn.transformer import FeedForward, Residual, TransformerLayout, final_norm, layout_attention
from zoo.reservoir import ACTIVATIONS, Reservoir, reverse_padded

__all__ = [
    "attend", "TransformerLayout", "layout_attention", "FeedForward", "Residual", "final_norm", "TargetEmbedding",
    "GridProjection", "flatten_grid", "Reservoir", "ACTIVATIONS", "reverse_padded",
    "LinearAttention", "LinearCrossAttention", "LinearLayout", "Gate", "FeatureMap",
    "S4D", "S4DMixer", "Mamba", "SSMStack", "S4DLayout", "MambaLayout", "padding_first",
    "HybridLayout", "AttentionSublayer", "AttentionLayers", "places_attention",
]  # fmt: skip
