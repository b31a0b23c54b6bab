"""The ``cnn`` frontend: a small convolutional network trained from scratch with the captioner."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from zoo.api import ConfigError, Frontend, SourceDescription, at_least, in_unit_interval, register
from zoo.api.layers import GridProjection


def conv_stage(in_channels: int, out_channels: int, convolutions: int) -> nn.Sequential:
    """3x3 convolutions with batch norm and ReLU, then 2x2 max pooling: half the side, ``out_channels`` deep."""
    layers: list[nn.Module] = []
    for channels in [in_channels] + [out_channels] * (convolutions - 1):
        layers += [nn.Conv2d(channels, out_channels, 3, padding=1, bias=False), nn.BatchNorm2d(out_channels), nn.ReLU()]
    return nn.Sequential(*layers, nn.MaxPool2d(2))


@register("frontend", "cnn")
class CNNFrontend(Frontend):
    """VGG-style stages (3x3 convolutions and a 2x2 max pool each; Simonyan & Zisserman, 2015), then the grid.

    ``forward(images (B, 3, H, W) in [0, 1]) -> (x (B, S, dim), mask (B, S))`` with
    ``S = (H / 2^stages) * (W / 2^stages)``: the last feature map flattened
    row-major (64 px and 3 stages: an 8 x 8 grid, 64 positions), projected to
    ``dim``, plus a learned embedding of each cell's row and column. The grid's
    mean is the pooled summary an ``identity`` encoder hands a decoder that does
    not attend (Show and Tell). Pixels are centred to [-1, 1].
    """

    source_kind = "image"

    @dataclass
    class Config:
        dim: int | None = None  # output width; null: the encoder's width (a Transformer's d_model, else 128)
        channels: list[int] = field(
            default_factory=lambda: [16, 32, 64]
        )  # channels of each stage; each halves the side
        convolutions: int = 1  # 3x3 convolutions per stage (VGG has 2-3; 1 keeps a CPU run fast)
        positions: bool = True  # add a learned row + column embedding to each grid cell
        dropout: float = 0.1  # dropout on the grid vectors

        def __post_init__(self) -> None:
            at_least(self, "dim", 1)
            at_least(self, "convolutions", 1)
            in_unit_interval(self, "dropout")
            if not self.channels or min(self.channels) < 1:
                raise ConfigError(f"channels={list(self.channels)} must list at least one positive channel count")

    def __init__(self, cfg: Config, source: SourceDescription) -> None:
        super().__init__()
        stages = len(cfg.channels)
        rows, columns = source.height >> stages, source.width >> stages
        if rows < 1 or columns < 1:
            raise ValueError(
                f"{stages} stages halve a {source.height}x{source.width} image to nothing; "
                "use fewer frontend.channels or a larger task.image_size"
            )
        self.output_dim = cfg.dim
        self.stages = nn.Sequential(
            *(conv_stage(i, o, cfg.convolutions) for i, o in zip([3, *cfg.channels], cfg.channels))
        )
        self.to_sequence = GridProjection(cfg.channels[-1], cfg.dim, rows, columns, cfg.positions, cfg.dropout)

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = self.stages(images * 2.0 - 1.0)
        self.grid = tuple(features.shape[-2:])
        return self.to_sequence(features)
