"""Images inside self-contained pages: a small copy as a ``data:`` URI, and what a run records to make one.

A report and an attention explorer are single offline files, so a picture they show
travels inside them as ``data:image/...;base64,...``. A captioning run's test items
(``test_items.jsonl``) record where their image can be found again: the path of an
image file, or, for pixels made in memory (the synthetic scenes), which exist nowhere
else, a small JPEG thumbnail (about 1.5 kB a 64 px scene).
"""

from __future__ import annotations

import base64
import io
import os
from typing import Any

import numpy as np
from PIL import Image

from zoo.contracts import ImageSource

#: Longest side, in pixels, of a thumbnail a run records or a report shows beside a sample.
THUMBNAIL_SIDE = 96
#: JPEG quality of thumbnails: photos and noisy scenes stay recognisable at a tenth of a PNG's size.
JPEG_QUALITY = 85


def data_uri(picture: Image.Image | np.ndarray, max_side: int, fmt: str = "JPEG") -> str:
    """``picture`` (Pillow image or (H, W, 3) uint8 array) shrunk to at most ``max_side`` pixels a side, as a
    ``data:`` URI in ``fmt`` (JPEG, or PNG where sharp edges matter more than bytes)."""
    image = picture if isinstance(picture, Image.Image) else Image.fromarray(np.ascontiguousarray(picture, np.uint8))
    image = image.convert("RGB")
    if max(image.size) > max_side:
        image.thumbnail((max_side, max_side), Image.BICUBIC)
    buffer = io.BytesIO()
    image.save(buffer, fmt, **({"quality": JPEG_QUALITY} if fmt == "JPEG" else {"optimize": True}))
    return f"data:image/{fmt.lower()};base64,{base64.b64encode(buffer.getvalue()).decode('ascii')}"


def image_record(source: Any) -> dict[str, str]:
    """What a test item's row keeps of its source so a report can show the image: ``{"image": absolute path}``
    for a file, ``{"thumbnail": data URI}`` for pixels made in memory, nothing for a source that is no image."""
    if not isinstance(source, ImageSource):
        return {}
    if source.path is not None:
        return {"image": os.path.abspath(source.path)}
    return {"thumbnail": data_uri(source.pixels, THUMBNAIL_SIDE)}
