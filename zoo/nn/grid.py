"""Image feature grids as sequences: row-major flattening and where each position sits."""

from __future__ import annotations

import torch
from torch import nn


def flatten_grid(features: torch.Tensor) -> torch.Tensor:
    """(B, C, rows, columns) -> (B, rows * columns, C), row by row (position k = row * columns + column)."""
    return features.flatten(2).transpose(1, 2)


class GridPositions(nn.Module):
    """A learned embedding of each grid cell's row plus one of its column, added to the flattened grid.

    Without it, attention over a grid knows what it looks at but not where, and
    captions that say "left of" or "in the top right" cannot be learned from an
    attention context alone. Factored into rows and columns (as ViT's 2-D variant
    does, Dosovitskiy et al. 2021), so ``rows + columns`` vectors cover the grid.
    ``forward(x (B, rows * columns, D), rows, columns) -> (B, rows * columns, D)``.
    """

    def __init__(self, rows: int, columns: int, dim: int) -> None:
        super().__init__()
        self.rows = nn.Parameter(torch.randn(rows, 1, dim) * 0.02)
        self.columns = nn.Parameter(torch.randn(1, columns, dim) * 0.02)

    def forward(self, x: torch.Tensor, rows: int, columns: int) -> torch.Tensor:
        if rows > self.rows.shape[0] or columns > self.columns.shape[1]:
            raise ValueError(
                f"a {rows}x{columns} grid is larger than the {self.rows.shape[0]}x{self.columns.shape[1]} "
                "this frontend was built for; use the image size it was trained with"
            )
        cells = self.rows[:rows] + self.columns[:, :columns]  # (rows, columns, D)
        return x + cells.reshape(rows * columns, -1)


class GridProjection(nn.Module):
    """A feature map to the sequence an encoder reads: flatten row-major, project to ``dim``, add cell positions.

    ``forward(features (B, C, rows, columns)) -> (x (B, rows * columns, dim), mask (B, rows * columns))``,
    the mask all True (every cell is real); :meth:`cells` does the same for a grid already flattened.
    ``positions=False`` leaves the positions to a ``posenc`` or to nothing.
    """

    def __init__(self, channels: int, dim: int, rows: int, columns: int, positions: bool, dropout: float) -> None:
        super().__init__()
        self.project = nn.Linear(channels, dim) if channels != dim else nn.Identity()
        self.positions = GridPositions(rows, columns, dim) if positions else None
        self.dropout = nn.Dropout(dropout)

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        rows, columns = features.shape[-2:]
        return self.cells(flatten_grid(features), rows, columns)

    def cells(self, flat: torch.Tensor, rows: int, columns: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, rows * columns, C) in row-major order -> the same as :meth:`forward`."""
        x = self.project(flat)
        if self.positions is not None:
            x = self.positions(x, rows, columns)
        mask = torch.ones(x.shape[:2], dtype=torch.bool, device=x.device)
        return self.dropout(x), mask
