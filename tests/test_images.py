"""Images decoded once and resized (zoo.data.images), precomputed features (zoo.data.features), grids (zoo.nn.grid)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from zoo.contracts import ImageSource
from zoo.data.features import FeatureError, FeatureTable, load_features
from zoo.data.images import Fit, ImageError, ImageStore, square_pixels
from zoo.nn.grid import flatten_grid


def striped(width: int, height: int) -> np.ndarray:
    """An image whose red channel is the column index: crops and stretches are easy to tell apart."""
    pixels = np.zeros((height, width, 3), dtype=np.uint8)
    pixels[..., 0] = np.arange(width, dtype=np.uint8)[None, :]
    return pixels


def test_center_fit_keeps_the_middle_and_stretch_keeps_everything():
    wide = ImageSource("wide", pixels=striped(200, 100))
    center, stretch = square_pixels(wide, 50, Fit.center), square_pixels(wide, 50, Fit.stretch)
    assert center.shape == stretch.shape == (3, 50, 50) and center.dtype == torch.uint8
    assert center[0, 25, 0] > 40 and center[0, 25, -1] < 160, "the central square of a wide image loses its sides"
    assert stretch[0, 25, 0] < 10 and stretch[0, 25, -1] > 185, "stretching keeps both edges"


def test_a_missing_or_broken_file_is_one_line_naming_it(tmp_path):
    with pytest.raises(ImageError, match="gone.jpg does not exist"):
        square_pixels(ImageSource("gone", path=str(tmp_path / "gone.jpg")), 8)
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"not a jpeg at all")
    with pytest.raises(ImageError, match="cannot decode image .*broken.jpg"):
        square_pixels(ImageSource("broken", path=str(broken)), 8)


def test_the_file_cache_is_written_once_and_reused(tmp_path):
    path = tmp_path / "a.png"
    Image.fromarray(striped(30, 20)).save(path)
    images = [ImageSource("a.png", path=str(path)), ImageSource("b", pixels=striped(20, 20))]
    cache = tmp_path / "cache" / "images.npy"
    first = ImageStore(images, 16, Fit.center, cache)
    path.unlink()  # a second store must not need the file: it reads the cache
    second = ImageStore(images, 16, Fit.center, cache)
    assert torch.equal(first[0], second[0]) and torch.equal(first[1], second[1])
    with pytest.raises(ImageError):  # another size is another cache
        ImageStore(images, 12, Fit.center, cache)


def test_grids_flatten_row_major():
    grid = torch.arange(6.0).reshape(1, 1, 2, 3)  # one channel: cell (r, c) holds r * 3 + c
    assert flatten_grid(grid)[0, :, 0].tolist() == [0, 1, 2, 3, 4, 5]


def test_features_load_from_pt_npz_and_folders(tmp_path):
    FeatureTable({"a": torch.ones(4, 3), "b": torch.zeros(4, 3)}, (2, 2)).save(tmp_path / "train.pt")
    np.savez(tmp_path / "test.npz", c=np.full((4, 3), 2.0, dtype=np.float32))
    table = load_features(tmp_path)
    assert table.grid == (2, 2) and table.feature_dim == 3 and set(table.features) == {"a", "b", "c"}
    assert float(table["c"][0, 0]) == 2.0
    np.savez(tmp_path / "pooled.npz", d=np.ones(5, dtype=np.float32))
    pooled = load_features(tmp_path / "pooled.npz")
    assert pooled.grid == (1, 1) and pooled["d"].shape == (1, 5), "a pooled vector is a 1 x 1 grid"


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "does not exist"),
        (b"garbage", "cannot read features file"),
    ],
)
def test_bad_features_files_are_one_line(tmp_path, content, message):
    path = tmp_path / "f.pt"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(FeatureError, match=message):
        load_features(path)
    with pytest.raises(FeatureError, match="no precomputed features for image 'x'"):
        FeatureTable({"a": torch.ones(1, 2)}, (1, 1))["x"]
