"""Precomputed image features: one (positions, feature_dim) array per image, keyed by the image's key.

Users with their own backbone extract features once (``zoo features`` does it
with any image frontend that has one) and then train with ``frontend=features``
in seconds per epoch. A features source is a ``.pt`` file holding
``{"features": {key: tensor}, "grid": [rows, columns]}`` (what ``zoo features``
writes), a ``.npz`` file with one array per key, or a folder of such files (one
per split, say), merged. An array is a grid flattened row-major,
(rows * columns, F), or a pooled vector (F,), which is a 1 x 1 grid.
"""

from __future__ import annotations

import math
import pickle
import zipfile
from pathlib import Path

import numpy as np
import torch

from zoo.errors import ZooError, first_line

SUFFIXES = (".pt", ".npz")


class FeatureError(ZooError, ValueError):
    """A features file is missing, unreadable or inconsistent."""


class FeatureTable:
    """Features of many images: ``table[key]`` is a (positions, feature_dim) float16 tensor.

    ``grid`` is (rows, columns) with rows * columns = positions, the same for every image.
    """

    def __init__(self, features: dict[str, torch.Tensor], grid: tuple[int, int]) -> None:
        self.features = features
        self.grid = grid
        self.feature_dim = next(iter(features.values())).shape[-1]

    def __getitem__(self, key: str) -> torch.Tensor:
        """The features of image ``key``; a file path finds its image by its trailing parts
        (``/data/flickr8k/images/x.jpg`` finds ``x.jpg``), so dataset images can be named by path."""
        parts = Path(key).parts
        for start in range(len(parts)):
            found = self.features.get("/".join(parts[start:]))
            if found is not None:
                return found
        raise FeatureError(
            f"no precomputed features for image '{key}'; a run that reads features captions only the images "
            "of its features file: extract them with `zoo features`, or use a run with an image frontend"
        )

    def save(self, path: Path) -> None:
        torch.save({"features": self.features, "grid": list(self.grid)}, path)


def load_features(location: str | Path) -> FeatureTable:
    """Read a features file or a folder of them; every problem is one line naming the file."""
    location = Path(location)
    if location.is_dir():
        files = sorted(p for p in location.iterdir() if p.suffix in SUFFIXES)
        if not files:
            raise FeatureError(f"feature folder {location} holds no {' or '.join(SUFFIXES)} files")
    elif location.is_file():
        files = [location]
    else:
        raise FeatureError(f"features file {location} does not exist; make one with `zoo features`")
    features: dict[str, torch.Tensor] = {}
    grids = set()
    for path in files:
        table, grid = _read(path)
        features.update(table)
        grids.add(grid)
    shapes = {tuple(t.shape) for t in features.values()}
    if len(shapes) != 1:
        raise FeatureError(
            f"features in {location} have different shapes {sorted(shapes)}; extract them all the same way"
        )
    ((positions, _),) = shapes
    grid = grids.pop() if len(grids) == 1 and None not in grids else _square(positions, location)
    if grid[0] * grid[1] != positions:
        raise FeatureError(f"features in {location}: grid {grid} does not hold {positions} positions")
    return FeatureTable(features, grid)


def _read(path: Path) -> tuple[dict[str, torch.Tensor], tuple[int, int] | None]:
    try:
        if path.suffix == ".pt":
            saved = torch.load(path, map_location="cpu", weights_only=True)
            table, grid = saved["features"], tuple(saved["grid"]) if saved.get("grid") else None
        else:
            with np.load(path) as arrays:
                table, grid = {key: torch.from_numpy(arrays[key]) for key in arrays.files}, None
    except (
        OSError,
        RuntimeError,
        ValueError,
        KeyError,
        TypeError,
        EOFError,
        pickle.UnpicklingError,
        zipfile.BadZipFile,
    ) as error:
        why = "not a file torch.save wrote" if isinstance(error, pickle.UnpicklingError) else first_line(error)
        raise FeatureError(
            f"cannot read features file {path} ({type(error).__name__}: {why}); extract it again"
        ) from None
    if not table:
        raise FeatureError(f"features file {path} holds no images")
    return {str(key): _as_grid(value).to(torch.float16) for key, value in table.items()}, grid


def _as_grid(value: torch.Tensor) -> torch.Tensor:
    return value.unsqueeze(0) if value.dim() == 1 else value.reshape(-1, value.shape[-1])


def _square(positions: int, location: Path) -> tuple[int, int]:
    side = math.isqrt(positions)
    if side * side != positions:
        raise FeatureError(f"features in {location} have {positions} positions and no grid; save them with a 'grid'")
    return side, side
