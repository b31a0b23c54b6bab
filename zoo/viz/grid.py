"""The image grid a captioner attends over: its cells' labels and the picture beneath it.

An image frontend flattens its feature grid row-major into the source sequence and
records the grid's (rows, columns) in ``frontend.grid`` (:class:`zoo.contracts.Frontend`),
so position ``r * columns + c`` is cell (r, c). To draw attention on the image, the
pictures and the explorer need that grid and the pixels the model read: the task's
own encoded pixels, or, for a run on precomputed features, the image file read
again and cropped as the task crops (``task.cfg.fit``, centre by default).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from zoo.data.images import Fit, ImageError, as_image, square_pixels

#: Side, in pixels, an image file is read at again when the model read precomputed features of it.
FEATURES_IMAGE_SIDE = 224


@dataclass
class ImageGrid:
    """The grid of cells attention is over, and the (H, W, 3) uint8 image under it (None: it cannot be read)."""

    rows: int
    columns: int
    pixels: np.ndarray | None

    @property
    def labels(self) -> list[str]:
        """One label per position, row-major: ``r0c0``, ``r0c1``, ... (as the features task names cells)."""
        return [f"r{r}c{c}" for r in range(self.rows) for c in range(self.columns)]


def image_grid(model: Any, task: Any, source: Any, encoded: Any) -> ImageGrid | None:
    """The grid of an image source that ``model`` has just read (None for a task that draws no image, or a
    frontend that reports no grid)."""
    grid = getattr(getattr(model, "frontend", None), "grid", None)
    if task.attention_view != "image" or grid is None:
        return None
    rows, columns = grid
    return ImageGrid(rows, columns, _pixels(task, source, encoded))


def _pixels(task: Any, source: Any, encoded: Any) -> np.ndarray | None:
    if isinstance(encoded, torch.Tensor) and encoded.dim() == 3 and encoded.dtype == torch.uint8:
        return encoded.permute(1, 2, 0).numpy()  # (3, H, W) pixels, as the model read them
    try:  # features: the image file again, cropped as the features were
        fit = getattr(task.cfg, "fit", Fit.center)
        return square_pixels(as_image(source), FEATURES_IMAGE_SIDE, fit).permute(1, 2, 0).numpy()
    except ImageError:
        return None
