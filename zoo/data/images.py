"""Images as models read them: decoded once, resized to a square, kept as uint8.

An :class:`~zoo.contracts.ImageSource` is a file (any format Pillow reads) or
pixels made in memory. :func:`square_pixels` gives the (3, size, size) uint8
tensor a batch stacks; the frontend turns it into floats and normalises it.
:class:`ImageStore` decodes every image of a split once, in memory or in a file
under the run's cache folder (a memory map), so an epoch never decodes a JPEG.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from PIL import Image, UnidentifiedImageError

from zoo.config.checks import Choice
from zoo.contracts import ImageSource
from zoo.errors import ZooError, first_line

log = logging.getLogger(__name__)


class ImageError(ZooError, ValueError):
    """An image file is missing or cannot be decoded."""


class Fit(Choice):
    """How an image becomes a square of ``size`` pixels."""

    center = "center"  # shorter side to size, then the central square (keeps the aspect ratio)
    stretch = "stretch"  # the whole image squeezed to size x size (keeps everything in view)


def as_image(source: ImageSource | str | os.PathLike) -> ImageSource:
    """An ImageSource as it is, or one for an image file named by its path (the path is its key)."""
    return source if isinstance(source, ImageSource) else ImageSource(str(source), path=str(source))


def names_image_file(text: str) -> bool:
    """Whether ``text`` is the path of an existing file in a format Pillow reads: meant for a captioner, not a
    sentence (a file that is not an image, or a path that is not a file, may be a sentence that looks like one)."""
    name = text.strip()
    readable = Image.registered_extensions().get(os.path.splitext(name)[1].lower()) in Image.OPEN
    return readable and os.path.isfile(name)


def read_rgb(image: ImageSource) -> Image.Image:
    """The image as an RGB Pillow image; a file that is missing, a folder, empty, too large or undecodable is one
    line naming it (truncated, damaged or no image at all: whatever a codec raises means the file cannot be used)."""
    if image.pixels is not None:
        return Image.fromarray(np.ascontiguousarray(image.pixels, dtype=np.uint8), "RGB")
    path = Path(image.path)
    if path.is_dir():
        raise ImageError(f"{path} is a folder, not an image file; give the image files in it (e.g. {path / '*.jpg'})")
    if not path.exists():
        raise ImageError(f"image file {path} does not exist; check its path")
    if path.stat().st_size == 0:
        raise ImageError(f"image file {path} is empty (0 bytes); replace it with the image")
    try:
        with Image.open(path) as opened:
            return opened.convert("RGB")
    except Image.DecompressionBombError:
        raise ImageError(
            f"image {path} has more than {2 * Image.MAX_IMAGE_PIXELS:,} pixels, too many to decode "
            "safely; shrink it (e.g. to at most 4000 pixels a side)"
        ) from None
    except UnidentifiedImageError:
        raise ImageError(
            f"cannot decode image {path}: it is not in an image format Pillow reads; give a PNG or JPEG file"
        ) from None
    except Exception as error:  # noqa: BLE001 - whatever a codec raises, the file cannot be used
        raise ImageError(
            f"cannot decode image {path} ({type(error).__name__}: {first_line(error)}); it may be "
            "truncated or damaged: replace the file"
        ) from None


def square_pixels(image: ImageSource, size: int, fit: Fit = Fit.center) -> torch.Tensor:
    """(3, size, size) uint8 RGB pixels of ``image`` (bicubic resampling, as ImageNet pipelines use)."""
    rgb = read_rgb(image)
    if fit == Fit.center:
        width, height = rgb.size
        scale = size / min(width, height)
        rgb = rgb.resize((max(size, round(width * scale)), max(size, round(height * scale))), Image.BICUBIC)
        left, top = (rgb.size[0] - size) // 2, (rgb.size[1] - size) // 2
        rgb = rgb.crop((left, top, left + size, top + size))
    elif rgb.size != (size, size):
        rgb = rgb.resize((size, size), Image.BICUBIC)
    return torch.from_numpy(np.asarray(rgb, dtype=np.uint8).copy()).permute(2, 0, 1)


def to_float(pixels: torch.Tensor) -> torch.Tensor:
    """uint8 pixels -> float in [0, 1] (what image frontends read)."""
    return pixels.float().div_(255.0)


class ImageStore:
    """Every image of a list decoded and resized once: ``store[k]`` is image ``k``'s (3, size, size) uint8 tensor.

    In memory by default. With ``cache_file`` the pixels live in a ``.npy`` file
    mapped into memory (written whole to a temporary name, then renamed; a later
    run with the same images, size and fit reuses it), which keeps large datasets
    out of RAM and lets a resumed run skip decoding.
    """

    def __init__(self, images: Sequence[ImageSource], size: int, fit: Fit, cache_file: Path | None = None) -> None:
        self.keys = [image.key for image in images]
        if cache_file is not None and self._cached(cache_file, size, fit):
            self.pixels = torch.from_numpy(np.load(cache_file, mmap_mode="c"))
            log.info("read %d decoded images from %s", len(self.keys), cache_file)
            return
        array = np.empty((len(images), 3, size, size), dtype=np.uint8)
        for row, image in enumerate(images):
            array[row] = square_pixels(image, size, fit).numpy()
        if cache_file is not None:
            self._write(cache_file, array, size, fit)
            array = np.load(cache_file, mmap_mode="c")
        self.pixels = torch.from_numpy(array)

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, row: int) -> torch.Tensor:
        return self.pixels[row]

    def _meta(self, size: int, fit: Fit) -> dict:
        return {"size": size, "fit": str(fit), "keys": self.keys}

    def _cached(self, cache_file: Path, size: int, fit: Fit) -> bool:
        meta_file = cache_file.with_suffix(".json")
        try:
            return json.loads(meta_file.read_text()) == self._meta(size, fit) and cache_file.is_file()
        except (OSError, ValueError):
            return False

    def _write(self, cache_file: Path, array: np.ndarray, size: int, fit: Fit) -> None:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        for path, write in (
            (cache_file, lambda handle: np.save(handle, array)),
            (cache_file.with_suffix(".json"), lambda handle: handle.write(json.dumps(self._meta(size, fit)).encode())),
        ):
            partial = path.with_name(path.name + ".partial")
            with open(partial, "wb") as handle:
                write(handle)
            os.replace(partial, path)
