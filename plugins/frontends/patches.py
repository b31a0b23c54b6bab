"""The ``patches`` frontend: an image cut into square patches, each linearly embedded (ViT)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from zoo.api import Frontend, SourceDescription, at_least, in_unit_interval, register
from zoo.api.layers import GridProjection


@register("frontend", "patches")
class PatchFrontend(Frontend):
    """Non-overlapping ``patch_size`` x ``patch_size`` patches, flattened and linearly projected
    (Dosovitskiy et al., 2021, "An Image is Worth 16x16 Words").

    ``forward(images (B, 3, H, W) in [0, 1]) -> (x (B, S, dim), mask (B, S))`` with
    ``S = (H / patch_size) * (W / patch_size)`` in row-major order, plus a learned
    row + column embedding. The projection is a convolution with stride equal to
    its kernel, which is the same linear map applied to every flattened patch.
    There is no class token: the ``identity`` encoder's mean, or an encoder's
    state, is the summary. Pixels are centred to [-1, 1].
    """

    source_kind = "image"

    @dataclass
    class Config:
        dim: int | None = None  # output width; null: the encoder's width (a Transformer's d_model, else 128)
        patch_size: int = 8  # side of a patch in pixels; the image side must be a multiple of it
        positions: bool = True  # add a learned row + column embedding to each patch
        dropout: float = 0.1  # dropout on the patch vectors

        def __post_init__(self) -> None:
            at_least(self, "dim", 1)
            at_least(self, "patch_size", 1)
            in_unit_interval(self, "dropout")

    def __init__(self, cfg: Config, source: SourceDescription) -> None:
        super().__init__()
        if source.height % cfg.patch_size or source.width % cfg.patch_size:
            raise ValueError(
                f"a {source.height}x{source.width} image does not split into {cfg.patch_size}-pixel patches; "
                "choose a frontend.patch_size that divides task.image_size"
            )
        rows, columns = source.height // cfg.patch_size, source.width // cfg.patch_size
        self.output_dim = cfg.dim
        self.embed = nn.Conv2d(3, cfg.dim, kernel_size=cfg.patch_size, stride=cfg.patch_size)
        self.to_sequence = GridProjection(cfg.dim, cfg.dim, rows, columns, cfg.positions, cfg.dropout)

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        patches = self.embed(images * 2.0 - 1.0)
        self.grid = tuple(patches.shape[-2:])
        return self.to_sequence(patches)
