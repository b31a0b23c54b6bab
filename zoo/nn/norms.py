"""Normalisation layers for Transformer blocks: LayerNorm, RMSNorm and Dynamic Tanh.

Every layer maps (..., D) -> (..., D) and normalises (or squashes) the last axis.
Pick one with :func:`make_norm`.
"""

from __future__ import annotations

import torch
from torch import nn

from zoo.config.checks import Choice


class Norm(Choice):
    """The normalisation layers :func:`make_norm` builds."""

    layernorm = "layernorm"
    rmsnorm = "rmsnorm"
    dyt = "dyt"


class DynamicTanh(nn.Module):
    """DyT(x) = gamma * tanh(alpha * x) + beta, a normalisation-free stand-in for LayerNorm (Zhu et al., 2025).

    ``alpha`` is one learnable scalar (initialised to ``alpha0``); ``gamma`` and
    ``beta`` are per-channel like LayerNorm's affine parameters.
    ``forward(x (..., D)) -> (..., D)``.
    """

    def __init__(self, dim: int, alpha0: float = 0.5) -> None:
        super().__init__()
        self.alpha = nn.Parameter(torch.tensor(float(alpha0)))
        self.gamma = nn.Parameter(torch.ones(dim))
        self.beta = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gamma * torch.tanh(self.alpha * x) + self.beta


def make_norm(kind: Norm | str, dim: int) -> nn.Module:
    """A normalisation layer over the last axis of size ``dim``.

    ``layernorm``: Ba et al. (2016); ``rmsnorm``: Zhang & Sennrich (2019), rescales by
    the root mean square without centring; ``dyt``: :class:`DynamicTanh`.
    """
    kind = Norm.parse(kind, "norm")
    if kind is Norm.layernorm:
        return nn.LayerNorm(dim)
    if kind is Norm.rmsnorm:
        return nn.RMSNorm(dim, eps=1e-6)
    return DynamicTanh(dim)
