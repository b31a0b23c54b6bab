"""Image files made in memory."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image


def png(width: int = 32, height: int = 32) -> bytes:
    """A PNG of ``width`` x ``height`` random RGB pixels (seeded: the same bytes every time)."""
    pixels = np.random.default_rng(0).integers(0, 256, (height, width, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "PNG")
    return buffer.getvalue()
