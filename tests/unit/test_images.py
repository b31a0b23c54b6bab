"""Images decoded once and resized (zoo.data.images), precomputed features (zoo.data.features), grids (zoo.nn.grid)."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from torch.utils.data import DataLoader

from zoo.contracts import ImageSource
from zoo.data.features import FeatureError, index_path, load_features, write_features
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


def features_file(folder, name="f.npy", images=3, dim=3, shift=0.0, **options):
    """A features file of images k0, k1, ... whose 2 x 2 grid of ``dim`` features all hold the image's number
    (+ shift), written two images at a time."""
    keys = [f"k{i}" for i in range(images)]
    values = torch.arange(images, dtype=torch.float32)[:, None, None].expand(images, 4, dim) + shift
    return write_features(folder / name, keys, values.split(2), (2, 2), **options)


def test_features_are_memory_mapped_and_read_a_batch_at_a_time(tmp_path):
    written = features_file(tmp_path, images=64, dim=32, dtype="float32", made_by={"frontend": {"name": "mine"}})
    table = load_features(tmp_path / "f.npy")
    assert isinstance(table.array, np.memmap) and table.array.shape == (64, 4, 32) and written.dtype == "float32"
    assert (table.grid, table.feature_dim, len(table)) == ((2, 2), 32, 64)
    assert table.rows([5, 2]).shape == (2, 4, 32) and table.rows([5, 2])[:, 0, 0].tolist() == [5.0, 2.0]
    assert table.row("/data/images/k7") == 7, "a file path finds its image by its trailing parts"
    index = json.loads((tmp_path / "f.index.json").read_text())
    assert index["made_by"] == {"frontend": {"name": "mine"}} and index["keys"][7] == "k7"
    pickled = pickle.dumps(table)  # what a data-loader worker receives: the index, never the array
    assert len(pickled) < table.array.nbytes / 4 and pickle.loads(pickled).rows([9])[0, 0, 0] == 9.0
    assert features_file(tmp_path, "half.npy").rows([1]).dtype == torch.float16, "float16 unless told otherwise"
    with pytest.raises(FeatureError, match="no precomputed features for image 'x'"):
        table.row("x")


def test_data_loader_workers_map_the_features_file_themselves(tmp_path):
    table = features_file(tmp_path, images=6)
    loader = DataLoader(range(6), batch_size=4, collate_fn=table.rows, num_workers=1)
    assert torch.cat(list(loader))[:, 0, 0].tolist() == [0, 1, 2, 3, 4, 5]
    assert str(table.path) not in Path("/proc/self/maps").read_text(), "the worker mapped it, not this process"


def test_an_interrupted_write_leaves_nothing_a_run_would_read(tmp_path):
    def cut_off(blocks):
        yield next(blocks)
        raise KeyboardInterrupt  # Ctrl-C halfway

    with pytest.raises(KeyboardInterrupt):
        write_features(tmp_path / "f.npy", ["a", "b", "c", "d"], cut_off(iter(torch.ones(4, 1, 2).split(2))), (1, 1))
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "f.npy.partial").write_bytes(b"what a killed write leaves")
    with pytest.raises(FeatureError, match="f.npy does not exist"):
        load_features(tmp_path / "f.npy")
    features_file(tmp_path)  # a later write replaces the leftover
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.index.json", "f.npy"]
    with pytest.raises(FeatureError, match="already exists"):  # a rewrite never destroys a complete file
        features_file(tmp_path, shift=10.0)
    assert load_features(tmp_path / "f.npy").rows([2])[0, 0, 0] == 2.0


def truncate(path):
    path.write_bytes(path.read_bytes()[:-10])


def swap_array(path):
    features_file(path.parent, "other.npy", shift=1.0)  # the same shape, another extraction
    (path.parent / "other.npy").replace(path)


@pytest.mark.parametrize(
    "damage, message",
    [
        (truncate, r"f.npy is cut short .*; rerun `zoo features`"),
        (swap_array, r"f.npy does not match its index .*; rerun `zoo features`"),
        (lambda path: index_path(path).unlink(), r"f.npy has no index f.index.json .* rerun `zoo features`"),
        (lambda path: index_path(path).write_text("{"), r"cannot read the features index .*; rerun `zoo features`"),
    ],
    ids=["truncated", "another array", "no index", "broken index"],
)
def test_a_damaged_features_file_is_refused_when_opened(tmp_path, damage, message):
    features_file(tmp_path)
    damage(tmp_path / "f.npy")
    with pytest.raises(FeatureError, match=message) as refused:
        load_features(tmp_path / "f.npy")
    assert "\n" not in str(refused.value)


def test_old_features_files_are_refused_with_what_to_do(tmp_path):
    before = tmp_path / "effnet.pt"  # what zoo features wrote before the memory-mapped format
    before.write_bytes(b"a torch.save dictionary")
    with pytest.raises(FeatureError, match=r"effnet.pt holds features in the old format.*rerun `zoo features`"):
        load_features(before)
    with pytest.raises(FeatureError, match="does not exist; make one with `zoo features`"):
        load_features(tmp_path / "missing.npy")
