"""The ``features`` frontend: precomputed image features (from ``zoo features`` or your own backbone)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from zoo.api import Frontend, SourceDescription, at_least, in_unit_interval, register
from zoo.api.layers import GridProjection


@register("frontend", "features")
class FeatureFrontend(Frontend):
    """Precomputed grid features, normalised and projected: backbone work done once, not every epoch.

    ``forward(features (B, S, F)) -> (x (B, S, dim), mask (B, S))``; the task reads
    ``S = rows * columns`` vectors per image from ``task.features``, a memory-mapped
    ``NAME.npy`` (:mod:`zoo.data.features`), a batch at a time (a pooled vector is a
    1 x 1 grid). Layer normalisation over F first puts features from
    any backbone on one scale; then a linear projection and a learned row + column
    embedding, as the image frontends add.
    """

    source_kind = "features"

    @dataclass
    class Config:
        dim: int | None = None  # output width; null: the encoder's width (a Transformer's d_model, else 128)
        positions: bool = True  # add a learned row + column embedding to each grid cell
        dropout: float = 0.1  # dropout on the projected vectors

        def __post_init__(self) -> None:
            at_least(self, "dim", 1)
            in_unit_interval(self, "dropout")

    def __init__(self, cfg: Config, source: SourceDescription) -> None:
        super().__init__()
        if source.feature_dim < 1:
            raise ValueError(f"the features frontend needs features, but the task gives {source}")
        self.output_dim = cfg.dim
        self.grid = (source.height, source.width)
        self.norm = nn.LayerNorm(source.feature_dim)
        self.to_sequence = GridProjection(source.feature_dim, cfg.dim, *self.grid, cfg.positions, cfg.dropout)

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.to_sequence.cells(self.norm(features), *self.grid)
